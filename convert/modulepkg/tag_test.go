package modulepkg_test

import (
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
)

// A module target is REPOSITORY:TAG: a version tag canonical ('+' as
// '_'), any other valid OCI tag as it is; a digest, no tag, a version
// that is not canonical or an invalid tag is refused.
func TestParseTarget(t *testing.T) {
	for in, want := range map[string][2]string{
		"ghcr.io/acme/vpc:1.0.0+build.5":  {"ghcr.io/acme/vpc", "1.0.0_build.5"},
		"localhost:5000/acme/vpc:latest":  {"localhost:5000/acme/vpc", "latest"},
		"oci-layout:/tmp/l/vpc:2.0.0-rc1": {"oci-layout:/tmp/l/vpc", "2.0.0-rc1"},
		"ghcr.io/acme/vpc:1.0.0_build.5":  {"ghcr.io/acme/vpc", "1.0.0_build.5"},
	} {
		ref, tag, err := modulepkg.ParseTarget(in)
		if err != nil || ref.Name() != want[0] || tag != want[1] {
			t.Errorf("%s: %s %q, %v; want %v", in, ref.Name(), tag, err, want)
		}
	}
	for _, bad := range []string{"ghcr.io/acme/vpc", "ghcr.io/acme/vpc@sha256:abc", "ghcr.io/acme/vpc:v1.0.0", "ghcr.io/acme/vpc:1.4", "ghcr.io/acme/vpc:-x"} {
		if _, _, err := modulepkg.ParseTarget(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
