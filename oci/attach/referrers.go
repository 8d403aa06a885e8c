package attach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"
)

// OCI 1.1 referrers: manifests whose subject is another manifest, listed
// by the registry's referrers API, or, where it has none, by the index
// the referrers tag schema keeps under the tag sha256-<hex> (oras-go
// falls back to it, as cosign v3 and notation write it); in an OCI
// layout, the manifests of the layout whose subject is the manifest
// (docs/artifacts.md, "Referrers"). Reads are bounded: at most
// MaxReferrers referrers of the wanted artifact type are read (listed
// entries of untold type, read to learn it, at most MaxUntoldReferrers
// of them, count only when they are of the type), the listing is read at
// most MaxReferrerPages pages of MaxManifestSize each (a layout's at most
// MaxReferrerScan manifests), every manifest and layer is refused by its
// size before it is fetched, and one read takes in at most
// MaxReferrerBytes in all.
const (
	// ArtifactTypeSigstoreBundle is cosign v3's signatures and
	// attestations: a manifest with one layer, a Sigstore bundle.
	ArtifactTypeSigstoreBundle = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// ArtifactTypeNotationSignature is a Notary Project signature: a
	// manifest with one layer, a JWS or COSE envelope.
	ArtifactTypeNotationSignature = "application/vnd.cncf.notary.signature"
	// MaxReferrers bounds the referrers of one artifact type read for one
	// subject.
	MaxReferrers = 64
	// MaxUntoldReferrers bounds the listed referrers of untold type read
	// to learn it, for one subject.
	MaxUntoldReferrers = 64
	// MaxReferrerBytes bounds the manifests and layers of referrers read
	// for one subject, in all.
	MaxReferrerBytes = 8 << 20
	// MaxReferrerPages bounds the pages of a referrers listing read.
	MaxReferrerPages = 16
	// MaxReferrerScan bounds the manifests of an OCI layout examined
	// for referrers of one subject.
	MaxReferrerScan = 1024
	// maxReferrerLayers bounds the layers of one referrer.
	maxReferrerLayers = 4
)

// Referrer is one referrer of a subject: its manifest's descriptor and
// annotations, and its layers read (AttachmentLayer: media type,
// payload, annotations). Err says why it could not be read intact (too
// large, too many layers, corrupt), with nothing else set but Descriptor.
type Referrer struct {
	Descriptor  ocispec.Descriptor
	Annotations map[string]string
	Layers      []AttachmentLayer
	Err         error
}

// Referrers are a subject's referrers of an artifact type, as read.
type Referrers struct {
	Items []Referrer
	// Truncated is set when more referrers of the type exist than were
	// read (MaxReferrers), or the listing was longer than it may be.
	Truncated bool
	// Unsupported is set when the repository cannot list referrers.
	Unsupported bool
}

// ReadReferrers lists subject's referrers of artifactType and reads each
// (bounded, see the package constants). A referrer whose content cannot
// be read intact (too large, corrupt, refused, missing) is returned with
// Err set; err is for the registry failing, while listing or while
// reading any referrer: never a verdict on the content.
func ReadReferrers(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, artifactType string) (Referrers, error) {
	return ReadReferrersUpTo(ctx, repo, subject, artifactType, oci.MaxSmallFile)
}

// ReadReferrersUpTo is ReadReferrers for an artifact type whose layers
// may be larger than oci.MaxSmallFile (a module's interface document):
// each layer is read up to maxLayer bytes, MaxReferrerBytes bounding
// them all as it does.
func ReadReferrersUpTo(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, artifactType string, maxLayer int64) (Referrers, error) {
	descs, truncated, err := listReferrers(ctx, repo, subject, artifactType)
	if errors.Is(err, errNoReferrers) {
		return Referrers{Unsupported: true}, nil
	}
	if err != nil {
		return Referrers{}, fmt.Errorf("listing the referrers of %s: %w", subject, err)
	}
	// The referrers are read at once (a signed release has two bundles, a
	// signature and an attestation): one round trip for the manifests,
	// one for their layers, however many there are.
	read := make([]Referrer, len(descs))
	keep := make([]bool, len(descs))
	budget := &referrerBudget{left: MaxReferrerBytes, maxLayer: maxLayer}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(referrerReads)
	for i, d := range descs {
		oci.GoRecovered(g, func() error {
			r, ok := readReferrer(gctx, repo, d, subject, artifactType, budget)
			if r.Err != nil && !oci.IsContentProblem(r.Err) {
				return fmt.Errorf("reading referrer %s of %s: %w", d.Digest, subject, r.Err)
			}
			read[i], keep[i] = r, ok
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Referrers{}, err
	}
	out := Referrers{Truncated: truncated || budget.spent(), Items: make([]Referrer, 0, len(descs))}
	for i, r := range read {
		if !keep[i] {
			continue
		}
		if len(out.Items) == MaxReferrers {
			out.Truncated = true
			break
		}
		out.Items = append(out.Items, r)
	}
	return out, nil
}

// referrerReads bounds the referrers of one subject read at once.
const referrerReads = 8

// referrerBudget is what one ReadReferrers may still take in
// (MaxReferrerBytes), shared by its concurrent reads: a manifest or
// layer that would overdraw it is not fetched, and the read says more
// exist than were read.
type referrerBudget struct {
	mu       sync.Mutex
	left     int64
	maxLayer int64 // the most one layer is read to (a larger one is refused)
}

func (b *referrerBudget) take(size int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if size < 0 || size > b.left {
		b.left = -1
		return false
	}
	b.left -= size
	return true
}

func (b *referrerBudget) spent() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left < 0
}

// mayBeOfType reports whether a listed referrer may be of artifactType:
// it says so, or it says nothing telling — no type, or the empty
// config's media type, as go-containerregistry's referrers tag schema
// index lists cosign's bundles on some registries (GHCR's among them,
// docs/artifacts.md "Referrers"). readReferrer reads the real type.
func mayBeOfType(d ocispec.Descriptor, artifactType string) bool {
	return d.ArtifactType == artifactType || d.ArtifactType == "" || d.ArtifactType == ocispec.MediaTypeEmptyJSON
}

var (
	errNoReferrers  = errors.New("the repository cannot list referrers")
	errEnough       = errors.New("enough referrers")
	errTooManyPages = errors.New("too many pages")
)

// CanListReferrers reports whether repo can list referrers (a registry,
// through its API or the tag schema; an OCI layout): where ReadReferrers
// says Unsupported, it says no.
func CanListReferrers(repo oci.ReadOnlyRepository) bool {
	if _, ok := repo.(registry.ReferrerLister); ok {
		return true
	}
	_, ok := repo.(content.ReadOnlyGraphStorage)
	return ok
}

// listReferrers lists at most MaxReferrers descriptors of subject's
// referrers of artifactType: through the referrers API (or its tag
// schema) of a registry, through the manifests of an OCI layout.
func listReferrers(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, artifactType string) ([]ocispec.Descriptor, bool, error) {
	if rl, ok := repo.(registry.ReferrerLister); ok {
		// The API and its tag schema need only the subject's digest.
		return listFromRegistry(ctx, rl, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: subject}, artifactType)
	}
	g, ok := repo.(content.ReadOnlyGraphStorage)
	if !ok {
		return nil, false, errNoReferrers
	}
	desc, err := repo.Resolve(ctx, subject.String())
	if oci.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return listFromLayout(ctx, repo, g, desc, artifactType)
}

// listFromRegistry reads the registry's listing page by page: the
// descriptors listed as artifactType (at most MaxReferrers), then those
// of untold type that may be of it (mayBeOfType, at most
// MaxUntoldReferrers), so that entries of other or untold types never
// crowd out the ones that say they are of the type.
func listFromRegistry(ctx context.Context, rl registry.ReferrerLister, subject ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, bool, error) {
	var typed, untold []ocispec.Descriptor
	pages, truncated := 0, false
	keep := func(list *[]ocispec.Descriptor, d ocispec.Descriptor, max int) {
		if len(*list) == max {
			truncated = true
			return
		}
		*list = append(*list, d)
	}
	// Unfiltered: oras-go would drop the entries of untold type itself.
	err := rl.Referrers(ctx, subject, "", func(page []ocispec.Descriptor) error {
		if pages++; pages > MaxReferrerPages {
			return errTooManyPages
		}
		for _, d := range page {
			switch {
			case d.ArtifactType == artifactType:
				keep(&typed, d, MaxReferrers)
			case mayBeOfType(d, artifactType):
				keep(&untold, d, MaxUntoldReferrers)
			}
		}
		if len(typed) == MaxReferrers && len(untold) == MaxUntoldReferrers {
			return errEnough
		}
		return nil
	})
	out := append(typed, untold...)
	switch {
	case errors.Is(err, errEnough), errors.Is(err, errTooManyPages):
		return out, true, nil
	case oci.IsNotFound(err):
		return nil, false, nil // no fallback index: no referrers
	}
	return out, truncated, err
}

// listFromLayout examines at most MaxReferrerScan of the manifests that
// refer to subject in a layout (each refused by its size before it is
// read), keeping those of artifactType whose subject is subject.
func listFromLayout(ctx context.Context, repo oci.ReadOnlyRepository, g content.ReadOnlyGraphStorage, subject ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, bool, error) {
	preds, err := g.Predecessors(ctx, subject)
	if err != nil {
		return nil, false, err
	}
	var out []ocispec.Descriptor
	for i, d := range preds {
		if i == MaxReferrerScan || len(out) == MaxReferrers {
			return out, true, nil
		}
		m, ok := referringManifest(ctx, repo, d, subject.Digest)
		if !ok || oci.ArtifactTypeOf(m) != artifactType {
			continue
		}
		d.ArtifactType, d.Annotations = artifactType, m.Annotations
		out = append(out, d)
	}
	return out, false, nil
}

// referringManifest is the image manifest d describes, when it is one
// (bounded, read and decoded) whose subject is subject; anything else,
// or what cannot be read, is not a referrer of subject.
func referringManifest(ctx context.Context, repo oci.ReadOnlyRepository, d ocispec.Descriptor, subject digest.Digest) (ocispec.Manifest, bool) {
	if d.MediaType != ocispec.MediaTypeImageManifest || oci.CheckManifestSize(d) != nil {
		return ocispec.Manifest{}, false
	}
	b, err := oci.FetchManifest(ctx, repo, d)
	if err != nil {
		return ocispec.Manifest{}, false
	}
	m, err := oci.DecodeManifest(d, b)
	if err != nil || m.Subject == nil || m.Subject.Digest != subject {
		return ocispec.Manifest{}, false
	}
	return m, true
}

// readReferrer reads a referrer's manifest and its layers, each refused
// by its size before it is fetched and checked against its digest; ok is
// false for a manifest of another artifact type than its listing let
// pass (mayBeOfType).
func readReferrer(ctx context.Context, repo oci.ReadOnlyRepository, d ocispec.Descriptor, subject digest.Digest, artifactType string, budget *referrerBudget) (r Referrer, ok bool) {
	r = Referrer{Descriptor: d}
	if oci.CheckManifestSize(d) == nil && !budget.take(d.Size) {
		return r, false // over the read's budget: ReadReferrers stops
	}
	m, err := oci.FetchImageManifest(ctx, repo, d)
	switch {
	case err != nil:
		r.Err = err
	case oci.ArtifactTypeOf(m) != artifactType && d.ArtifactType != artifactType:
		return r, false // listed without a telling type: another kind
	case oci.ArtifactTypeOf(m) != artifactType:
		r.Err = oci.Invalid("referrer %s is listed as %s but is of type %q", d.Digest, artifactType, oci.ArtifactTypeOf(m))
	case m.Subject == nil || m.Subject.Digest != subject:
		r.Err = oci.Invalid("referrer %s is not about %s", d.Digest, subject)
	case len(m.Layers) > maxReferrerLayers:
		r.Err = oci.Invalid("referrer %s has %d layers, more than the %d read", d.Digest, len(m.Layers), maxReferrerLayers)
	}
	if r.Err != nil {
		return r, true
	}
	r.Annotations = m.Annotations
	if !budget.take(layersSize(m.Layers, budget.maxLayer)) { // all of them or none: reads run at once
		return Referrer{Descriptor: d, Err: oci.Invalid("referrer %s: over the %d MiB read for one subject's referrers", d.Digest, MaxReferrerBytes>>20)}, true
	}
	for _, l := range m.Layers {
		payload, err := oci.FetchAtMost(ctx, repo, l, budget.maxLayer)
		if err != nil {
			return Referrer{Descriptor: d, Err: fmt.Errorf("referrer %s: %w", d.Digest, err)}, true
		}
		r.Layers = append(r.Layers, AttachmentLayer{MediaType: l.MediaType, Payload: payload, Annotations: l.Annotations})
	}
	return r, true
}

// layersSize is what reading layers takes in: each at most maxLayer
// (a larger one is refused by its size before it is fetched).
func layersSize(layers []ocispec.Descriptor, maxLayer int64) int64 {
	var n int64
	for _, l := range layers {
		n += min(max(l.Size, 0), maxLayer)
	}
	return n
}

// WriteReferrer writes a referrer of subject, a manifest held in repo
// (its media type and size are asked of repo when not given; given, the
// manifest is taken to be there, as by a caller that has just written
// it): an
// image manifest of artifactType whose config is the empty descriptor,
// holding layers (at most maxReferrerLayers) and annotations, its subject
// the subject's descriptor. No tag names it: a registry with the
// referrers API lists it there; on one without, oras-go adds it to the
// index the referrers tag schema keeps under sha256-<hex> (as cosign v3,
// notation and oras write it); an OCI layout lists it in index.json.
// This is the form cosign v3 writes its bundles in (docs/artifacts.md,
// "Referrers"); `oras cp -r`, `regctl image copy --referrers` and cosign
// find it there.
func WriteReferrer(ctx context.Context, repo oci.Repository, subject ocispec.Descriptor, artifactType string, layers []AttachmentLayer, annotations map[string]string) (ocispec.Descriptor, error) {
	if len(layers) == 0 || len(layers) > maxReferrerLayers {
		return ocispec.Descriptor{}, fmt.Errorf("a referrer holds 1 to %d layers, not %d", maxReferrerLayers, len(layers))
	}
	sub, err := referredTo(ctx, repo, subject)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	a := &oci.Artifact{Blobs: []oci.Blob{oci.EmptyConfig()}}
	m := ocispec.Manifest{
		ArtifactType: artifactType,
		Config:       ocispec.DescriptorEmptyJSON,
		Subject:      &ocispec.Descriptor{MediaType: sub.MediaType, Digest: sub.Digest, Size: sub.Size},
		Annotations:  annotations,
	}
	for _, l := range layers {
		b := oci.BytesBlob(l.MediaType, l.Payload, l.Annotations)
		a.Blobs = append(a.Blobs, b)
		m.Layers = append(m.Layers, b.Descriptor)
	}
	mf, err := oci.EncodeManifest(m)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	a.Manifests = []oci.Manifest{mf}
	// Made now: written without asking the registry first; the empty
	// config is the one the repository's manifests name.
	fresh := oci.PushOptions{Fresh: true, Held: []digest.Digest{ocispec.DescriptorEmptyJSON.Digest}}
	if _, err := oci.Push(ctx, repo, a, oci.Tags{}, fresh); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("writing a referrer of %s: %w", subject.Digest, err)
	}
	return mf.Descriptor, nil
}

// referredTo is the descriptor a referrer names as its subject: subject
// as given when it has its media type and size, else as the repository
// resolves its digest.
func referredTo(ctx context.Context, repo oci.ReadOnlyRepository, subject ocispec.Descriptor) (ocispec.Descriptor, error) {
	if subject.Size > 0 && (subject.MediaType == ocispec.MediaTypeImageManifest || subject.MediaType == ocispec.MediaTypeImageIndex) {
		return ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}, nil
	}
	sub, err := repo.Resolve(ctx, subject.Digest.String())
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("resolving %s, to refer to it: %w", subject.Digest, err)
	}
	if sub.MediaType != ocispec.MediaTypeImageManifest && sub.MediaType != ocispec.MediaTypeImageIndex {
		// An OCI layout resolves an untagged digest it did not write in
		// this process as application/octet-stream: the manifest says.
		b, err := oci.FetchManifest(ctx, repo, sub)
		if err != nil {
			return ocispec.Descriptor{}, fmt.Errorf("reading %s, to refer to it: %w", subject.Digest, err)
		}
		var head struct {
			MediaType string `json:"mediaType"`
		}
		if json.Unmarshal(b, &head) == nil && head.MediaType != "" {
			sub.MediaType = head.MediaType
		}
	}
	return sub, nil
}
