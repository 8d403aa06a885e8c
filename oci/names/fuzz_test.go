package names_test

import (
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// FuzzParseAddresses: addresses, platforms and specs from command lines,
// lock files, configurations and registries never make a parser panic;
// what parses prints back as itself and is made of validated parts only.
func FuzzParseAddresses(f *testing.F) {
	for _, s := range []string{
		"hashicorp/aws", "registry.opentofu.org/hashicorp/aws", "example.com/test/hello@~> 1.0",
		"linux_amd64", "a/b/c/d", "xn--bcher-kva.example/ns/t", "h/ns/t@>= 99999999999999999999999",
		"acme", "UPPER/Case/Name", "a..b/c/d", "-/-/-", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if p, err := names.ParseProvider(s); err == nil {
			if !names.ValidHostname(p.Hostname) || !names.ValidProviderPart(p.Namespace) || !names.ValidProviderPart(p.Type) {
				t.Fatalf("%q parsed to %+v", s, p)
			}
			again, err := names.ParseProvider(p.String())
			if err != nil || again != p {
				t.Fatalf("%q: %s parses to %+v, %v", s, p, again, err)
			}
		}
		if spec, err := names.ParseProviderSpec(s); err == nil {
			names.ConstraintsString(spec.Constraints)
		}
		if p, err := names.ParsePlatform(s); err == nil {
			if p.String() != s || strings.ContainsAny(s, "/\\. ") {
				t.Fatalf("%q parsed to platform %+v", s, p)
			}
		}
		parts := strings.SplitN(s, "/", 3)
		if len(parts) == 3 {
			if m, err := names.ParseModule(parts[0], parts[1], parts[2]); err == nil {
				for _, part := range []string{m.Namespace, m.Name, m.System} {
					if part == "" || strings.ContainsAny(part, "/\\.:@ ") {
						t.Fatalf("%q parsed to module %+v", s, m)
					}
				}
			}
		}
		if v, err := names.ParseTofuVersion(s); err == nil {
			names.TagForVersion(v)
		}
		names.ParseProtocolVersion(s)
		names.ValidTofuArtifact(s)
	})
}
