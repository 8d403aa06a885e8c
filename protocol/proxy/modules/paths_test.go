package modules

import (
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// FuzzParseModulePaths: no input makes the module path parsers
// panic, and whatever parses is made only of validated names and round
// trips.
func FuzzParseModulePaths(f *testing.F) {
	for _, s := range []string{
		"acme/network/aws/versions",
		"acme/network/aws/1.0.0+b.1/download",
		"acme/net_work/aws/2.0.0-rc1/download",
		"acme/network/aws/1.0.0/" + strings.Repeat("a", 64) + "/acme-network-aws-1.0.0.zip",
		"%00/%ff/%/x",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkModule := func(m names.Module) {
			for _, n := range []string{m.Namespace, m.Name, m.System} {
				if n == "" || strings.ContainsAny(n, "/.\\:@%") || strings.ToLower(n) != n {
					t.Fatalf("%q: module name %q", s, n)
				}
			}
		}
		if r, err := ParseModulePath(s); err == nil {
			checkModule(r.Module)
		}
		if r, err := ParseModuleArchivePath(s); err == nil {
			checkModule(r.Module)
			again, err := ParseModuleArchivePath(moduleArchivePath(r.Module, r.Version, r.Manifest))
			if err != nil || again.Module != r.Module || again.Manifest != r.Manifest || again.Version.String() != r.Version.String() {
				t.Fatalf("%q: round trip %+v %v", s, again, err)
			}
		}
	})
}
