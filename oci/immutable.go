package oci

import (
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ErrVersionExists reports a version tag that holds other content than
// the push would write.
var ErrVersionExists = errors.New("version already exists")

// The one immutability rule for provider, module and OpenTofu release
// versions (docs/artifacts.md, "Tag writes"): a version tag — a canonical
// version, as OpenTofu lists tags — is written once. A push whose
// content differs from what such a tag holds is refused, naming both
// digests, unless replace is set. Tags that are not versions (latest,
// stable) are pointers: they move to the pushed content.
//
// Callers verify their content before they build the artifact this
// compares, so that a refusal here never hides a verification failure.

// CheckVersions applies the rule to a push of root under t.
func (t Tags) CheckVersions(root digest.Digest, replace bool) error {
	if replace {
		return nil
	}
	for _, tag := range sortedTags(t) {
		if held := t[tag]; held != "" && held != root && IsVersionTag(tag) {
			return versionExists(tag, held, root)
		}
	}
	return nil
}

// Conflicts reports whether a push of other content than the tags hold
// would be refused: a version tag among them holds something already.
// Callers use it to skip work (early uploads) for a push that will only be
// refused; the refusal itself is CheckVersions'.
func (t Tags) Conflicts(replace bool) bool {
	if replace {
		return false
	}
	for tag, held := range t {
		if held != "" && IsVersionTag(tag) {
			return true
		}
	}
	return false
}

// IsVersionTag reports whether tag names a version (and so is written
// once): a canonical version with '+' written as '_'.
func IsVersionTag(tag string) bool { return names.CanonicalTag(tag) }

func versionExists(tag string, held, root digest.Digest) error {
	return fmt.Errorf("%w: %s already holds different content (%s; this push is %s): a version is written once, so publish the change as a new version",
		ErrVersionExists, tag, held, root)
}
