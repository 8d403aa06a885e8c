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
		"example.com/test/hello/index.json",
		"example.com/test/hello/1.0.0.json",
		"example.com/test/hello/2.0.0-rc1.json",
		"example.com/test/../index.json",
		"example.com/te%2Fst/hello/index.json",
		"ns/t/versions",
		"ns/t/1.0.0/download/linux/amd64",
		"ns/t/1.0.0/download/../amd64",
		"h/ns/hello/1.0.0/" + strings.Repeat("a", 64) + "/terraform-provider-hello_1.0.0_linux_amd64.zip",
		"h/ns/hello/1.0.0/" + strings.Repeat("a", 64) + "/terraform-provider-hello_1.0.0_SHA256SUMS",
		"h/ns/hello/1.0.0+x/" + strings.Repeat("a", 64) + "/terraform-provider-hello_1.0.0+x_SHA256SUMS.sig",
		"acme/network/aws/versions",
		"acme/network/aws/1.0.0+b.1/download",
		"acme/net_work/aws/2.0.0-rc1/download",
		"acme/network/aws/1.0.0/" + strings.Repeat("a", 64) + "/acme-network-aws-1.0.0.zip",
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
