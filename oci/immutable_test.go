package oci_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
)

// The one rule for version tags: a version tag holding other content is
// refused, naming both digests, unless replace; pointers (latest) move.
func TestTagsCheckVersions(t *testing.T) {
	const held, root = digest.Digest("sha256:" + "11"), digest.Digest("sha256:" + "22")
	for _, tc := range []struct {
		tags    oci.Tags
		replace bool
		refused bool
	}{
		{oci.Tags{"1.0.0": "", "latest": held}, false, false},
		{oci.Tags{"1.0.0": root, "latest": held}, false, false},
		{oci.Tags{"1.0.0": held, "latest": ""}, false, true},
		{oci.Tags{"1.0.0_build.5": held}, false, true},
		{oci.Tags{"v1.0.0": held, "1.0": held}, false, false},
		{oci.Tags{"1.0.0": held}, true, false},
	} {
		err := tc.tags.CheckVersions(root, tc.replace)
		if refused := errors.Is(err, oci.ErrVersionExists); refused != tc.refused {
			t.Errorf("%v replace=%v: %v", tc.tags, tc.replace, err)
		}
		if err != nil && (!strings.Contains(err.Error(), string(held)) || !strings.Contains(err.Error(), string(root))) {
			t.Errorf("the refusal does not name both digests: %v", err)
		}
		if tc.refused && !tc.tags.Conflicts(tc.replace) {
			t.Errorf("%v replace=%v: Conflicts does not foresee the refusal", tc.tags, tc.replace)
		}
	}
}
