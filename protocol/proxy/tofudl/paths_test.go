package tofudl

import (
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// FuzzParseTofuPaths: no input makes the TofuDL download path parser
// panic, and whatever parses is a valid release and artifact name.
func FuzzParseTofuPaths(f *testing.F) {
	for _, s := range []string{
		"v1.10.0-beta1/tofu_1.10.0-beta1_linux_amd64.tar.gz",
		"v1.9.0/tofu_1.9.0_SHA256SUMS.gpgsig",
		"v1.9.0/..",
		"%00/%ff/%/x",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if r, err := ParseTofuDownloadPath(s); err == nil {
			if !names.IsTofuVersion(r.Version.String()) || !names.ValidTofuArtifact(r.Artifact) || strings.ContainsAny(r.Artifact, "/\\") {
				t.Fatalf("%q: %+v", s, r)
			}
		}
	})
}
