package publish

import (
	"context"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// pushWithDocs is PushProvider with t.DocsDir: read before anything is
// written, stored before any tag (or after, for a release up to date,
// whose documentation's error is then attestErr: nothing was written).
func pushWithDocs(ctx context.Context, rel *release.Provider, t ProviderTarget) (res oci.PushResult, err, attestErr error) {
	docs, err := readDocs(t)
	if err != nil {
		return res, err, nil
	}
	if docs == nil { // an OCI layout
		return pushProvider(ctx, rel, t)
	}
	t.Options.BeforeTag = docs.beforeTag(t.Options.BeforeTag)
	res, err, attestErr = pushProvider(ctx, rel, t)
	if err == nil && attestErr == nil {
		attestErr = docs.upToDate(ctx, res)
	}
	return res, err, attestErr
}

// releaseDocs is a provider release's documentation (push provider
// --docs) on its way to being stored as a referrer of the index.
type releaseDocs struct {
	docs   *providerdocs.Docs
	t      ProviderTarget
	stored bool
}

// readDocs reads t.DocsDir before anything is written; nil when t is
// an OCI layout (which stores none, as it stores
// no SBOMs: its index.json keeps to the tagged versions for crane push).
func readDocs(t ProviderTarget) (*releaseDocs, error) {
	docs, err := providerdocs.ReadDir(t.DocsDir)
	if err != nil {
		return nil, fmt.Errorf("reading the documentation: %w", err)
	}
	if t.Report != nil && len(docs.Skipped) > 0 {
		t.Report.Infof("documentation: %s of %s not read (not part of the registry's docs layout): %s", names.Plural(len(docs.Skipped), "path"), t.DocsDir, clipList(docs.Skipped, 5))
	}
	if t.Ref.Layout {
		if t.Report != nil {
			t.Report.Infof("%s: no documentation in an OCI layout (its index.json keeps to the tagged versions, as crane push and skopeo read it): push provider --docs into the registry it is copied to stores it (an up-to-date push adds it)", t.Ref.Name())
		}
		return nil, nil
	}
	return &releaseDocs{docs: docs, t: t}, nil
}

// beforeTag is the push's BeforeTag: the documentation stored as a
// referrer of root, then next's (when set).
func (d *releaseDocs) beforeTag(next func(context.Context, ocispec.Descriptor) error) func(context.Context, ocispec.Descriptor) error {
	return func(ctx context.Context, root ocispec.Descriptor) error {
		if err := d.store(ctx, root); err != nil {
			return err
		}
		if next != nil {
			return next(ctx, root)
		}
		return nil
	}
}

// upToDate stores the documentation of a release its tags held already
// (beforeTag was not called), unless the same is stored.
func (d *releaseDocs) upToDate(ctx context.Context, res oci.PushResult) error {
	if d.stored {
		return nil
	}
	if err := d.store(ctx, res.Root); err != nil {
		return fmt.Errorf("%s: %w", d.t.Ref.Name(), err)
	}
	return nil
}

// store attaches the documentation to root and reports it.
func (d *releaseDocs) store(ctx context.Context, root ocispec.Descriptor) error {
	s, err := providerdocs.Attach(ctx, d.t.Repo, root, d.docs, d.t.Options.Replace)
	if err != nil {
		return err
	}
	d.stored = true
	if d.t.DocsStored != nil {
		*d.t.DocsStored = s
	}
	if d.t.Report == nil {
		return nil
	}
	switch {
	case !s.Written:
		d.t.Report.Infof("its documentation is stored already (%s, referrer %s)", names.Plural(s.Pages, "page"), s.Referrer.Digest)
	case len(s.Replaced) > 0:
		d.t.Report.Infof("stored its documentation (%s) as referrer %s, replacing %s (--replace)", names.Plural(s.Pages, "page"), s.Referrer.Digest, clipList(digestStrings(s.Replaced), 3))
	default:
		d.t.Report.Infof("stored its documentation (%s) as referrer %s", names.Plural(s.Pages, "page"), s.Referrer.Digest)
	}
	return nil
}

// clipList is the first n of s, comma-separated, and how many more.
func clipList(s []string, n int) string {
	if len(s) <= n {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:n], ", "), len(s)-n)
}

// digestStrings are ds as strings.
func digestStrings(ds []digest.Digest) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}

// docsResult is the documentation stored, as push provider --json
// reports it: its referrer's digest, how many pages, whether this push
// wrote it and the referrers it replaced (--replace).
func docsResult(s providerdocs.Stored) map[string]any {
	return map[string]any{"referrer": s.Referrer.Digest.String(), "pages": s.Pages, "written": s.Written, "replaced": digestStrings(s.Replaced)}
}
