package release

import (
	"context"
	"fmt"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
)

// The repository's version index (oci/versionindex), updated by every
// push of a release once its version tag is written: push provider, push
// mirror, mirror and pull-through all push through Provider.Push. It is a
// hint for listings: failing to write it is a warning
// (VersionIndexNote), never the push's failure.

// updateVersionIndex sets the pushed release a (tagged now) in repo's
// version index; what went wrong is kept as a note.
func (rel *Provider) updateVersionIndex(ctx context.Context, repo oci.Repository, a *oci.Artifact) {
	rel.indexNote = ""
	if err := updateIndex(ctx, repo, rel.Version, a); err != nil {
		rel.indexNote = "the repository's version index (tag " + versionindex.Tag + ") was not updated, so listings read this version from its tag: " + err.Error()
	}
}

// VersionIndexNote is the warning of the last Push about the version
// index ("" when it was updated or needed nothing).
func (rel *Provider) VersionIndexNote() string { return rel.indexNote }

func updateIndex(ctx context.Context, repo oci.Repository, version string, a *oci.Artifact) error {
	v, err := names.ParseVersion(version)
	if err != nil {
		return err
	}
	root := a.Manifests[len(a.Manifests)-1]
	pv, err := oci.ParseProviderIndex(root.Descriptor, root.Bytes)
	if err != nil {
		return err
	}
	pv.Version = v
	e, ok := versionindex.EntryOf(pv)
	if !ok {
		return fmt.Errorf("the release's index %s carries no provenance summary", root.Descriptor.Digest)
	}
	_, err = versionindex.Update(ctx, repo, e)
	return err
}
