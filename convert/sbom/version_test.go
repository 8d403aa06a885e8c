package sbom

import (
	"reflect"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Choose takes the platforms asked for, each of which the version must
// have, else all of them, sorted.
func TestStoredVersionChoose(t *testing.T) {
	linux, darwin := names.Platform{OS: "linux", Arch: "amd64"}, names.Platform{OS: "darwin", Arch: "arm64"}
	sv := &StoredVersion{ProviderVersion: &oci.ProviderVersion{Platforms: map[names.Platform]ocispec.Descriptor{linux: {}, darwin: {}}}}
	if got, err := sv.Choose(nil); err != nil || !reflect.DeepEqual(got, []names.Platform{darwin, linux}) {
		t.Errorf("all: %v, %v", got, err)
	}
	if got, err := sv.Choose([]names.Platform{linux}); err != nil || !reflect.DeepEqual(got, []names.Platform{linux}) {
		t.Errorf("asked: %v, %v", got, err)
	}
	_, err := sv.Choose([]names.Platform{{OS: "windows", Arch: "amd64"}})
	if want := "has no windows_amd64 platform (it has darwin_arm64, linux_amd64)"; err == nil || err.Error() != want {
		t.Errorf("missing: %v, want %q", err, want)
	}
}
