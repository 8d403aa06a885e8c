package publish

import (
	"context"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Release is what Push writes: a *release.Provider or a *release.Tofu,
// verified, pushed under its version tag and also.
type Release interface {
	Push(ctx context.Context, repo oci.Repository, opts oci.PushOptions, also ...string) (oci.PushResult, error)
}

// RootAttester attests a release's root as Push stores it.
type RootAttester interface {
	// BeforeTag is called once the root and everything it names are
	// written and before any tag is: what it writes is there when the
	// tags appear, and its error ends the push with nothing tagged.
	// whileTagging, when not nil, writes the rest, while the version
	// tags are written.
	BeforeTag(ctx context.Context, repo oci.Repository, root ocispec.Descriptor) (whileTagging func(context.Context) error, err error)
	// UpToDate attests a root the push found its tags holding already
	// (BeforeTag was not called).
	UpToDate(ctx context.Context, repo oci.Repository, root ocispec.Descriptor) error
}

// Push pushes rel to repo with opts, tagged with its version and also,
// and with att (nil: none) attests its root: att.BeforeTag before
// opts.BeforeTag and before any tag is written, so a reader never finds
// the release tagged without what it writes; what it leaves to write
// while tagging runs beside the version tags' writes and settling, and
// Push returns once both are done; a release already up to date is
// attested after (att.UpToDate).
//
// err is the push's (a failure of att.BeforeTag is one: nothing was
// tagged); attestErr is the attestation's after the push's BeforeTag:
// the writes while tagging, or those of an up-to-date release.
func Push(ctx context.Context, repo oci.Repository, rel Release, opts oci.PushOptions, att RootAttester, also ...string) (res oci.PushResult, err, attestErr error) {
	if att == nil {
		res, err = rel.Push(ctx, repo, opts, also...)
		return res, err, nil
	}
	var t tagging
	opts.BeforeTag = t.hook(repo, att, opts.BeforeTag)
	res, err = rel.Push(ctx, repo, opts, also...)
	attested, attestErr := t.wait()
	if err != nil || attested {
		return res, err, attestErr
	}
	return res, nil, att.UpToDate(ctx, repo, res.Root)
}

// tagging is one push's attestation while its tags are written.
type tagging struct {
	called bool
	done   chan error
}

// hook is the push's BeforeTag: att's, then next's (when set); then it
// starts the writes att leaves for while tagging, and returns.
func (t *tagging) hook(repo oci.Repository, att RootAttester, next func(context.Context, ocispec.Descriptor) error) func(context.Context, ocispec.Descriptor) error {
	return func(ctx context.Context, root ocispec.Descriptor) error {
		t.called = true
		whileTagging, err := att.BeforeTag(ctx, repo, root)
		if err != nil {
			return err
		}
		if next != nil {
			if err := next(ctx, root); err != nil {
				return err
			}
		}
		if whileTagging != nil {
			t.done = make(chan error, 1)
			go func() { t.done <- whileTagging(ctx) }()
		}
		return nil
	}
}

// wait is the result of the writes while tagging, once they are done;
// attested is false when the push did not call its BeforeTag (up to
// date, or failed first).
func (t *tagging) wait() (attested bool, err error) {
	if t.done != nil {
		err = <-t.done
	}
	return t.called, err
}
