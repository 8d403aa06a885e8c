package moduledoc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Where interfaces are stored: each as an OCI 1.1 referrer of the module
// manifest it describes, artifact type ArtifactType, the empty config and
// one layer of that media type holding the Doc's JSON, no annotations (the
// same Doc, the same referrer). The module manifest and its tags are not
// touched: OpenTofu's oci:// source reads what it read before, and
// `oras cp -r` and `regctl image copy --referrers` copy the referrer
// with it, as they copy SBOMs and signatures.

// ErrNoDoc is Read's answer for a module manifest without a stored
// interface.
var ErrNoDoc = errors.New("no interface is stored for it")

// ErrBadDoc is in Read's error when interface referrers are stored but
// none could be read or parsed.
var ErrBadDoc = errors.New("no stored interface could be read")

// Attach stores d as a referrer of subject (a module manifest in repo; its
// media type and size are asked of repo when not given), unless one with
// the same bytes is there already: written is false then, and Attach
// wrote nothing.
func Attach(ctx context.Context, repo oci.Repository, subject ocispec.Descriptor, d *Doc) (ocispec.Descriptor, bool, error) {
	b, err := d.Marshal()
	if err != nil {
		return ocispec.Descriptor{}, false, err
	}
	held, err := attach.ReadReferrersUpTo(ctx, repo, subject.Digest, ArtifactType, MaxDocSize)
	if err != nil {
		return ocispec.Descriptor{}, false, err
	}
	for _, r := range held.Items {
		if r.Err == nil && len(r.Layers) == 1 && bytes.Equal(r.Layers[0].Payload, b) {
			return r.Descriptor, false, nil
		}
	}
	desc, err := write(ctx, repo, subject, b)
	return desc, err == nil, err
}

// write stores the Doc's JSON b as a referrer of subject without looking
// for one first.
func write(ctx context.Context, repo oci.Repository, subject ocispec.Descriptor, b []byte) (ocispec.Descriptor, error) {
	layer := attach.AttachmentLayer{MediaType: ArtifactType, Payload: b}
	d, err := attach.WriteReferrer(ctx, repo, subject, ArtifactType, []attach.AttachmentLayer{layer}, nil)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("storing the interface of %s: %w", subject.Digest, err)
	}
	return d, nil
}

// Read reads the interface stored for subject (a module manifest): of
// several, the one of the highest Format that parses, then the first by
// digest. ErrNoDoc when there is none; a referrer that does not parse is
// skipped, and its error (wrapping ErrBadDoc) returned only when no other
// parses. Other errors are the registry's.
func Read(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest) (*Doc, error) {
	d, _, err := readStored(ctx, repo, subject)
	return d, err
}

// readStored is Read, with the referrer the Doc was read from.
func readStored(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest) (*Doc, ocispec.Descriptor, error) {
	held, err := attach.ReadReferrersUpTo(ctx, repo, subject, ArtifactType, MaxDocSize)
	if err != nil {
		return nil, ocispec.Descriptor{}, err
	}
	items := slices.Clone(held.Items)
	slices.SortFunc(items, func(a, b attach.Referrer) int {
		return strings.Compare(string(a.Descriptor.Digest), string(b.Descriptor.Digest))
	})
	var best *Doc
	var bestDesc ocispec.Descriptor
	var firstErr error
	for _, r := range items {
		if r.Err == nil {
			var d *Doc
			if d, r.Err = parseReferrer(r); r.Err == nil {
				if best == nil || d.Format > best.Format {
					best, bestDesc = d, r.Descriptor
				}
				continue
			}
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("%w: the interface referrer %s of %s: %w", ErrBadDoc, r.Descriptor.Digest, subject, r.Err)
		}
	}
	switch {
	case best != nil:
		return best, bestDesc, nil
	case firstErr != nil:
		return nil, ocispec.Descriptor{}, firstErr
	}
	return nil, ocispec.Descriptor{}, ErrNoDoc
}

// parseReferrer is the Doc a referrer read intact holds in its one layer.
func parseReferrer(r attach.Referrer) (*Doc, error) {
	if len(r.Layers) != 1 || r.Layers[0].MediaType != ArtifactType {
		return nil, oci.Invalid("referrer %s does not hold one %s layer", r.Descriptor.Digest, ArtifactType)
	}
	return ParseDoc(r.Layers[0].Payload)
}

// PushOptions say how Push pushes a package and stores its interface.
type PushOptions struct {
	oci.PushOptions
	// NotInLayout stores no interface in an OCI layout, whose index.json
	// then keeps to the tagged versions, as `crane push DIR` reads it
	// (push module, as push provider stores no SBOMs there); Report is
	// told so.
	NotInLayout bool
	// Report, when set, is told what became of the interface.
	Report *report.Reporter
}

// Push pushes p to target (modulepkg.Package.Push) with its interface:
// extracted before anything is written (FromPackage; its error pushes
// nothing), stored as a referrer of the module manifest once the manifest
// is written and before any tag is (its error leaves nothing tagged),
// unless a stored one of this Format is there. When every tag held the
// package already (up to date, an Unchanged package), the interface is
// stored after, if missing: a package pushed without one gets it then.
func Push(ctx context.Context, p *modulepkg.Package, target modulepkg.Target, opts PushOptions) (oci.PushResult, error) {
	if opts.NotInLayout && target.Ref.Layout {
		if opts.Report != nil {
			opts.Report.Infof("%s: its interface is not stored in an OCI layout (its index.json keeps to the tagged versions, as crane push reads it): a push into the registry it is copied to stores it", target.Ref.Name())
		}
		return p.Push(ctx, target, opts.PushOptions)
	}
	doc, err := FromPackage(ctx, p)
	if err != nil {
		return oci.PushResult{}, fmt.Errorf("reading the interface of %s: %w (nothing was pushed)", p.Source, err)
	}
	b, err := doc.Marshal()
	if err != nil {
		return oci.PushResult{}, fmt.Errorf("%s: %w (nothing was pushed)", p.Source, err)
	}
	repo, err := target.Client.Open(target.Ref)
	if err != nil {
		return oci.PushResult{}, err
	}
	var stored Stored
	before := opts.BeforeTag
	opts.BeforeTag = func(ctx context.Context, root ocispec.Descriptor) (err error) {
		if stored, err = store(ctx, repo, root, b); err != nil || before == nil {
			return err
		}
		return before(ctx, root)
	}
	res, err := p.Push(ctx, target, opts.PushOptions)
	if err != nil {
		return res, err
	}
	if res.UpToDate { // BeforeTag was not called
		if stored, err = store(ctx, repo, res.Root, b); err != nil {
			return res, fmt.Errorf("%s is pushed, but its interface is not stored: %w (pushing it again stores it)", target.Ref.WithReference(target.Tags[0]), err)
		}
	}
	stored.report(opts.Report, doc)
	return res, nil
}

// Stored says what became of a package's interface: written now, or
// found stored already, as Referrer.
type Stored struct {
	Referrer ocispec.Descriptor
	Written  bool
}

// store stores the Doc's JSON b as a referrer of root unless an interface
// of this Format (or a later one) is stored for it already.
func store(ctx context.Context, repo oci.Repository, root ocispec.Descriptor, b []byte) (Stored, error) {
	held, desc, err := readStored(ctx, repo, root.Digest)
	switch {
	case err == nil && held.Format >= Format:
		return Stored{Referrer: desc}, nil
	case err != nil && !errors.Is(err, ErrNoDoc) && !errors.Is(err, ErrBadDoc):
		return Stored{}, fmt.Errorf("reading the interface stored for %s: %w", root.Digest, err)
	}
	desc, err = write(ctx, repo, root, b)
	return Stored{Referrer: desc, Written: err == nil}, err
}

// report tells rep (when set) what became of d.
func (s Stored) report(rep *report.Reporter, d *Doc) {
	if rep == nil {
		return
	}
	if !s.Written {
		rep.Infof("its interface is stored already (referrer %s)", s.Referrer.Digest)
		return
	}
	rep.Infof("stored its interface (%s) as referrer %s", d.counts(), s.Referrer.Digest)
}

// counts says what the root module takes and gives, how many submodules
// and examples the package has, and how many errors were met reading it.
func (d *Doc) counts() string {
	p := &d.Package
	parts := []string{names.Plural(len(p.Root.Inputs), "input"), names.Plural(len(p.Root.Outputs), "output")}
	if n := len(p.Submodules); n > 0 {
		parts = append(parts, names.Plural(n, "submodule"))
	}
	if n := len(p.Examples); n > 0 {
		parts = append(parts, names.Plural(n, "example"))
	}
	if n := p.errorCount(); n > 0 {
		parts = append(parts, names.Plural(n, "error")+" reading it")
	}
	return strings.Join(parts, ", ")
}

// errorCount counts the error diagnostics of the package and its modules.
func (p *Package) errorCount() int {
	n := 0
	all := [][]Diagnostic{p.Diagnostics}
	for _, m := range p.modules() {
		all = append(all, m.Diagnostics)
	}
	for _, ds := range all {
		for _, d := range ds {
			if d.Severity == SeverityError {
				n++
			}
		}
	}
	return n
}
