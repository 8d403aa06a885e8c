package providerdocs

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// Where documentation is stored: an OCI 1.1 referrer of the provider
// version's index, artifact type ArtifactType, the empty config and one
// layer of LayerMediaType holding the Docs' JSON, gzipped. A referrer
// written by --replace names the ones it replaces in its annotation
// AnnotationReplaces; without it, none (the same tree, the same
// referrer).
const (
	ArtifactType   = "application/vnd.oci-tofu.provider.docs.v1+json"
	LayerMediaType = "application/vnd.oci-tofu.provider.docs.v1+json+gzip"
	// AnnotationReplaces lists, comma-separated, the digests of the
	// documentation referrers of the same index a --replace push
	// replaced: a reader ignores those.
	AnnotationReplaces = "vnd.oci-tofu.provider.docs.replaces"
)

// ErrNoDocs is Read's answer for an index without stored documentation.
var ErrNoDocs = errors.New("this release carries no documentation")

// ErrBadDocs is in Read's error when documentation referrers are
// stored but none could be read.
var ErrBadDocs = errors.New("no stored documentation could be read")

// ErrDiffers is Attach's error when other documentation is stored for
// the release and replace was not asked for.
var ErrDiffers = errors.New("other documentation is stored for this release")

// maxJSON bounds the JSON a stored document inflates to: the pages'
// bytes, escaped, and their index.
const maxJSON = 2*MaxTotalSize + 1<<20

// Marshal is the stored layer: d's JSON, gzipped; an error when it is
// larger than MaxStoredSize.
func (d *Docs) Marshal() ([]byte, error) {
	j, err := d.canonical()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression) // a valid level
	if _, err := zw.Write(j); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if b.Len() > MaxStoredSize {
		return nil, fmt.Errorf("the documentation compresses to %d bytes, more than the %d stored", b.Len(), MaxStoredSize)
	}
	return b.Bytes(), nil
}

// canonical is d's JSON, pages in order: two trees of the same pages
// give the same bytes.
func (d *Docs) canonical() ([]byte, error) {
	c := Docs{Format: Format, Pages: slices.Clone(d.Pages)}
	if c.Pages == nil {
		c.Pages = []Page{}
	}
	sortPages(c.Pages)
	return json.Marshal(c)
}

// Same reports whether d and o hold the same pages.
func (d *Docs) Same(o *Docs) bool {
	a, err1 := d.canonical()
	b, err2 := o.canonical()
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// Parse reads a stored layer, bounded: at most MaxStoredSize in,
// maxJSON inflated, MaxPages pages, each of a known category and a page
// name.
func Parse(layer []byte) (*Docs, error) {
	d, _, err := parseUpTo(layer, maxJSON)
	return d, err
}

// parseUpTo is Parse inflating at most limit bytes (at most maxJSON),
// and how many it inflated.
func parseUpTo(layer []byte, limit int64) (*Docs, int64, error) {
	if len(layer) > MaxStoredSize {
		return nil, 0, oci.Invalid("the documentation is %d bytes, more than %d", len(layer), MaxStoredSize)
	}
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		return nil, 0, oci.Invalid("the documentation is not gzipped: %v", err)
	}
	j, err := io.ReadAll(io.LimitReader(zr, min(limit, maxJSON)+1))
	inflated := int64(len(j))
	if err != nil {
		return nil, inflated, oci.Invalid("the documentation does not inflate: %v", err)
	}
	if inflated > min(limit, maxJSON) {
		return nil, inflated, oci.Invalid("the documentation inflates to more than %d bytes", min(limit, maxJSON))
	}
	d, err := parseJSON(j)
	return d, inflated, err
}

// parseJSON reads a stored document's JSON, checked as Parse says.
func parseJSON(j []byte) (*Docs, error) {
	var d Docs
	if err := json.Unmarshal(j, &d); err != nil {
		return nil, oci.Invalid("the documentation is not its JSON: %v", err)
	}
	if d.Format < 1 || len(d.Pages) > MaxPages {
		return nil, oci.Invalid("the documentation has format %d and %d pages", d.Format, len(d.Pages))
	}
	for _, p := range d.Pages {
		if !KnownCategory(p.Category) || !NameOK(p.Slug) {
			return nil, oci.Invalid("the documentation has a page %q/%q", p.Category, p.Slug)
		}
	}
	sortPages(d.Pages)
	if p := firstRepeated(d.Pages); p != nil {
		return nil, oci.Invalid("the documentation has the page %s/%s twice", p.Category, p.Slug)
	}
	return &d, nil
}

// firstRepeated is the first page of sorted pages that another names
// (the same category and slug: one URL for two pages), or nil.
func firstRepeated(sorted []Page) *Page {
	for i := 1; i < len(sorted); i++ {
		if sorted[i].Category == sorted[i-1].Category && sorted[i].Slug == sorted[i-1].Slug {
			return &sorted[i]
		}
	}
	return nil
}

// Read reads the documentation stored for subject (a provider version's
// index): the referrer no other replaces (AnnotationReplaces), of
// several the first by digest that parses. ErrNoDocs when there is
// none; ErrBadDocs (wrapped) when none parses; other errors are the
// registry's.
func Read(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest) (*Docs, ocispec.Descriptor, error) {
	held, err := attach.ReadReferrersUpTo(ctx, repo, subject, ArtifactType, MaxStoredSize)
	if err != nil {
		return nil, ocispec.Descriptor{}, err
	}
	items := current(held.Items)
	var firstErr error
	direct := 0
	inflate := int64(maxInflated) // what the parses may still inflate
	for _, r := range items {
		if inflate <= 0 {
			return nil, ocispec.Descriptor{}, fmt.Errorf("%w; the other documentation referrers of %s were not read: those read inflate to more than %d bytes in all",
				firstErr, subject, maxInflated)
		}
		if r.Err != nil && direct < maxDirectReads {
			direct++ // past the read's budget, read alone (a --replace leaves two large ones)
			if r = readDirect(ctx, repo, r.Descriptor); r.Err != nil && !oci.IsContentProblem(r.Err) {
				return nil, ocispec.Descriptor{}, fmt.Errorf("reading the documentation referrer %s of %s: %w", r.Descriptor.Digest, subject, r.Err)
			}
		}
		if r.Err == nil {
			d, inflated, err := parseReferrer(r, inflate)
			if inflate -= inflated; err == nil {
				return d, r.Descriptor, nil
			}
			r.Err = err
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("%w: the documentation referrer %s of %s: %w", ErrBadDocs, r.Descriptor.Digest, subject, r.Err)
		}
	}
	if firstErr != nil {
		return nil, ocispec.Descriptor{}, firstErr
	}
	return nil, ocispec.Descriptor{}, ErrNoDocs
}

// maxDirectReads bounds the referrers Read reads alone, after
// attach.ReadReferrersUpTo could not.
const maxDirectReads = 2

// maxInflated bounds what Read inflates of the referrers it tries in
// all: two documents of the most a document may inflate to. Each
// referrer's layer may be a small gzip inflating to maxJSON; without
// it, 64 of them cost 64 inflations of maxJSON on each cold read.
const maxInflated = 2 * maxJSON

// readDirect reads the referrer d alone: its manifest, of ArtifactType,
// and its one layer, at most MaxStoredSize. Content problems are Err.
func readDirect(ctx context.Context, repo oci.ReadOnlyRepository, d ocispec.Descriptor) attach.Referrer {
	r := attach.Referrer{Descriptor: d}
	if r.Err = oci.CheckManifestSize(d); r.Err != nil {
		return r
	}
	m, err := oci.FetchImageManifest(ctx, repo, d)
	switch {
	case err != nil:
		r.Err = err
	case oci.ArtifactTypeOf(m) != ArtifactType || len(m.Layers) != 1:
		r.Err = oci.Invalid("referrer %s is not one documentation layer", d.Digest)
	}
	if r.Err != nil {
		return r
	}
	payload, err := oci.FetchAtMost(ctx, repo, m.Layers[0], MaxStoredSize)
	if err != nil {
		r.Err = err
		return r
	}
	r.Annotations = m.Annotations
	r.Layers = []attach.AttachmentLayer{{MediaType: m.Layers[0].MediaType, Payload: payload}}
	return r
}

// current are the referrers no other names as replaced (in its
// manifest's annotations, or those its listing gives, which a referrer
// past the read's budget still has), by digest.
func current(items []attach.Referrer) []attach.Referrer {
	replaced := map[string]bool{}
	for _, r := range items {
		for _, ann := range []map[string]string{r.Annotations, r.Descriptor.Annotations} {
			for _, d := range strings.Split(ann[AnnotationReplaces], ",") {
				replaced[strings.TrimSpace(d)] = true
			}
		}
	}
	out := slices.DeleteFunc(slices.Clone(items), func(r attach.Referrer) bool { return replaced[r.Descriptor.Digest.String()] })
	slices.SortFunc(out, func(a, b attach.Referrer) int {
		return strings.Compare(string(a.Descriptor.Digest), string(b.Descriptor.Digest))
	})
	return out
}

// parseReferrer is the Docs a referrer read intact holds in its layer,
// inflating at most limit bytes, and how many it inflated.
func parseReferrer(r attach.Referrer, limit int64) (*Docs, int64, error) {
	if len(r.Layers) != 1 || r.Layers[0].MediaType != LayerMediaType {
		return nil, 0, oci.Invalid("referrer %s does not hold one %s layer", r.Descriptor.Digest, LayerMediaType)
	}
	return parseUpTo(r.Layers[0].Payload, limit)
}

// Stored says what became of a release's documentation: written now
// (Replaced naming what it replaced), or found stored already, as
// Referrer.
type Stored struct {
	Referrer ocispec.Descriptor
	Written  bool
	Replaced []digest.Digest
	Pages    int
}

// Attach stores d as a referrer of subject (a provider version's index
// in repo) unless the same pages are stored for it already. Other pages
// stored for it are ErrDiffers unless replace: a published version does
// not change without --replace; with it, the new referrer replaces
// every one stored (AnnotationReplaces).
func Attach(ctx context.Context, repo oci.Repository, subject ocispec.Descriptor, d *Docs, replace bool) (Stored, error) {
	layer, err := d.Marshal()
	if err != nil {
		return Stored{}, err
	}
	held, desc, err := Read(ctx, repo, subject.Digest)
	switch {
	case err == nil && held.Same(d):
		return Stored{Referrer: desc, Pages: len(held.Pages)}, nil
	case err == nil && !replace:
		return Stored{}, fmt.Errorf("%w (referrer %s: %d pages, %d given): a published version does not change; --replace stores the new documentation", ErrDiffers, desc.Digest, len(held.Pages), len(d.Pages))
	case err != nil && !errors.Is(err, ErrNoDocs) && !errors.Is(err, ErrBadDocs):
		return Stored{}, fmt.Errorf("reading the documentation stored for %s: %w", subject.Digest, err)
	}
	s := Stored{Written: true, Pages: len(d.Pages)}
	var ann map[string]string
	if err == nil || errors.Is(err, ErrBadDocs) {
		s.Replaced, err = storedDigests(ctx, repo, subject.Digest)
		if err != nil {
			return Stored{}, err
		}
		ann = replacesAnnotation(s.Replaced)
	}
	s.Referrer, err = attach.WriteReferrer(ctx, repo, subject, ArtifactType, []attach.AttachmentLayer{{MediaType: LayerMediaType, Payload: layer}}, ann)
	if err != nil {
		return Stored{}, fmt.Errorf("storing the documentation of %s: %w", subject.Digest, err)
	}
	return s, nil
}

// storedDigests are the documentation referrers of subject, by digest.
func storedDigests(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest) ([]digest.Digest, error) {
	held, err := attach.ReadReferrersUpTo(ctx, repo, subject, ArtifactType, MaxStoredSize)
	if err != nil {
		return nil, err
	}
	var out []digest.Digest
	for _, r := range held.Items {
		out = append(out, r.Descriptor.Digest)
	}
	slices.Sort(out)
	return out, nil
}

// replacesAnnotation names the replaced referrers, or is nil for none.
func replacesAnnotation(replaced []digest.Digest) map[string]string {
	if len(replaced) == 0 {
		return nil
	}
	s := make([]string, len(replaced))
	for i, d := range replaced {
		s[i] = d.String()
	}
	return map[string]string{AnnotationReplaces: strings.Join(s, ",")}
}
