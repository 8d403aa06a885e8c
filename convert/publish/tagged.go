package publish

import (
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// VersionTagged is ref with the tag version gives it (names.TagForVersion:
// '+' written as '_'); an error when version is not one.
func VersionTagged(ref oci.Reference, version string) (oci.Reference, error) {
	v, err := names.ParseVersion(version)
	if err != nil {
		return oci.Reference{}, err
	}
	return ref.WithReference(names.TagForVersion(v)), nil
}
