package oci

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/content"
)

// Provenance is the metadata oci-tofu keeps beside a provider release, so the
// proxy can serve the Provider Registry Protocol and lock files can be
// written without downloading zips. It is the config blob of the provenance
// manifest; the original files are its layers.
type Provenance struct {
	// Type and Version of the provider, from the release file names.
	Type    string `json:"type"`
	Version string `json:"version"`
	// Protocols are the plugin protocol versions from the release manifest
	// ("5.0", "6.0"); empty when the release had none.
	Protocols []string `json:"protocols,omitempty"`
	// SigningKeyIDs are the IDs (16 upper-case hex digits) of the keys
	// whose signature over SHA256SUMS was verified when pushing.
	SigningKeyIDs []string `json:"signing_key_ids,omitempty"`
	// Platforms maps "os_arch" to the package's file name and its h1 hash,
	// computed as OpenTofu computes it after unpacking.
	Platforms map[string]ProvenancePlatform `json:"platforms"`
}

// ProvenancePlatform describes one platform's package.
type ProvenancePlatform struct {
	Filename string `json:"filename"`
	H1       string `json:"h1"`
}

// ProvenanceFiles are the original release files kept with a provider.
type ProvenanceFiles struct {
	SHA256SUMS, Signature, Keys, ReleaseManifest NamedBytes
}

// NamedBytes is a small file: its name in the release and its content.
type NamedBytes struct {
	Name string
	Data []byte
}

// ProvenanceArtifact is the encoded provenance manifest and its blobs.
type ProvenanceArtifact struct {
	Meta     Provenance
	Manifest Manifest
	Blobs    []Blob
}

// summary is the index annotations that summarise the provenance.
func (pa *ProvenanceArtifact) summary() map[string]string {
	a := map[string]string{AnnotationProtocols: strings.Join(pa.Meta.Protocols, ",")}
	if len(pa.Meta.SigningKeyIDs) > 0 {
		a[AnnotationSigningKeys] = strings.Join(pa.Meta.SigningKeyIDs, ",")
	}
	return a
}

// provenanceLayer is one kind of file a provenance manifest holds.
type provenanceLayer struct {
	mediaType string
	get       func(*ProvenanceFiles) *NamedBytes
}

var provenanceLayers = []provenanceLayer{
	{MediaTypeSHA256SUMS, func(f *ProvenanceFiles) *NamedBytes { return &f.SHA256SUMS }},
	{MediaTypePGPSignature, func(f *ProvenanceFiles) *NamedBytes { return &f.Signature }},
	{MediaTypePGPKeys, func(f *ProvenanceFiles) *NamedBytes { return &f.Keys }},
	{MediaTypeReleaseManifest, func(f *ProvenanceFiles) *NamedBytes { return &f.ReleaseManifest }},
}

// BuildProvenance encodes provenance metadata and files as an image manifest
// with artifactType ArtifactTypeProvenance. Each file is a layer titled with
// its original name, so `oras pull` gives the files back.
func BuildProvenance(p Provenance, files ProvenanceFiles) (*ProvenanceArtifact, error) {
	cfg, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	config := BytesBlob(MediaTypeProvenanceConfig, cfg, nil)
	pa := &ProvenanceArtifact{Meta: p, Blobs: []Blob{config}}
	m := ocispec.Manifest{ArtifactType: ArtifactTypeProvenance, Config: config.Descriptor}
	for _, l := range provenanceLayers {
		f := l.get(&files)
		if f.Data == nil {
			continue
		}
		if len(f.Data) > MaxSmallFile {
			return nil, fmt.Errorf("%s is larger than %d bytes", f.Name, MaxSmallFile)
		}
		b := BytesBlob(l.mediaType, f.Data, map[string]string{AnnotationTitle: f.Name})
		pa.Blobs = append(pa.Blobs, b)
		m.Layers = append(m.Layers, b.Descriptor)
	}
	if pa.Manifest, err = EncodeManifest(m); err != nil {
		return nil, err
	}
	return pa, nil
}

// ReadProvenance reads a provenance manifest, then its config and its
// files in parallel (two round trips).
func ReadProvenance(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) (*Provenance, *ProvenanceFiles, error) {
	return ReadProvenanceHinted(ctx, repo, desc, nil)
}

// ReadProvenanceHinted is ReadProvenance given hints, the blobs the
// provenance is expected to hold (ProvenanceBlobs, as a version index
// lists them): they are fetched beside the manifest rather than after it,
// so a provenance whose hints are right is read in one round trip. A hint
// is only a guess: a blob fetched for one is used only when the manifest
// names its digest and size (and its content is verified as every
// fetch's); what the hints miss is fetched after the manifest.
func ReadProvenanceHinted(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor, hints []ocispec.Descriptor) (*Provenance, *ProvenanceFiles, error) {
	ctx, cancel := context.WithCancel(ctx)
	early := prefetchBlobs(ctx, repo, hints)
	defer early.stop(cancel)
	m, err := FetchImageManifest(ctx, repo, desc)
	if err != nil {
		return nil, nil, err
	}
	if m.ArtifactType != ArtifactTypeProvenance || m.Config.MediaType != MediaTypeProvenanceConfig {
		return nil, nil, Invalid("manifest %s is not an oci-tofu provenance manifest", desc.Digest)
	}
	seen := map[string]bool{}
	for _, layer := range m.Layers {
		if _, ok := layerKind(layer.MediaType); ok && seen[layer.MediaType] {
			return nil, nil, Invalid("provenance %s holds two %s layers", desc.Digest, layer.MediaType)
		}
		seen[layer.MediaType] = true
	}
	var p Provenance
	files := &ProvenanceFiles{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	GoRecovered(g, func() error {
		cfg, err := early.fetch(gctx, m.Config)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(cfg, &p); err != nil {
			return Invalid("provenance config %s: %v", m.Config.Digest, err)
		}
		return nil
	})
	for _, layer := range m.Layers {
		l, ok := layerKind(layer.MediaType)
		if !ok {
			continue
		}
		GoRecovered(g, func() error {
			data, err := early.fetch(gctx, layer)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			*l.get(files) = NamedBytes{Name: layer.Annotations[AnnotationTitle], Data: data}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return &p, files, nil
}

// ProvenanceBlobs are the blobs ReadProvenance reads of provenance
// manifest m (its config and its files), by digest and size, sorted by
// digest: the hints ReadProvenanceHinted takes.
func ProvenanceBlobs(m ocispec.Manifest) []ocispec.Descriptor {
	out := []ocispec.Descriptor{{Digest: m.Config.Digest, Size: m.Config.Size}}
	for _, layer := range m.Layers {
		if _, ok := layerKind(layer.MediaType); ok {
			out = append(out, ocispec.Descriptor{Digest: layer.Digest, Size: layer.Size})
		}
	}
	slices.SortFunc(out, func(a, b ocispec.Descriptor) int { return strings.Compare(string(a.Digest), string(b.Digest)) })
	return slices.CompactFunc(out, func(a, b ocispec.Descriptor) bool { return a.Digest == b.Digest })
}

// layerKind is the provenance file kind of a layer's media type.
func layerKind(mediaType string) (provenanceLayer, bool) {
	for _, l := range provenanceLayers {
		if l.mediaType == mediaType {
			return l, true
		}
	}
	return provenanceLayer{}, false
}

// FetchSmall reads a blob of at most MaxSmallFile bytes (a provenance
// file, a signature payload) whole, verified against desc (size and
// digest, content.FetchAll); a larger one, or a digest that is not
// sha256, is refused before the registry is asked.
func FetchSmall(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) ([]byte, error) {
	return FetchAtMost(ctx, repo, desc, MaxSmallFile)
}

// FetchAtMost is FetchSmall with another bound: a blob of at most max
// bytes, read whole and verified against desc.
func FetchAtMost(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor, max int64) ([]byte, error) {
	if desc.Size > max || desc.Size < 0 {
		return nil, Invalid("blob %s of %d bytes is larger than the %d byte limit", desc.Digest, desc.Size, max)
	}
	if err := desc.Digest.Validate(); err != nil || desc.Digest.Algorithm() != digest.SHA256 {
		return nil, Invalid("blob digest %q is not a valid sha256 digest", desc.Digest)
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", desc.Digest, err)
	}
	return b, nil
}

// MaxProvenanceHints bounds the blobs ReadProvenanceHinted fetches for
// hints: a provenance holds a config and four kinds of files.
const MaxProvenanceHints = 8

// MaxProvenanceHintBytes bounds the bytes ReadProvenanceHinted fetches
// for hints altogether: a provenance's config and files are a few
// kilobytes, while an index may hint MaxProvenanceHints blobs of
// MaxSmallFile bytes each, fetched for nothing when the manifest names
// none of them.
const MaxProvenanceHintBytes = MaxSmallFile

// earlyBlobs are the blobs fetched for hints, by digest, while the
// manifest naming them is read.
type earlyBlobs struct {
	repo  ReadOnlyRepository
	g     errgroup.Group
	blobs map[digest.Digest]*earlyBlob
}

// earlyBlob is one hinted blob's fetch: done closes when data or err is
// set.
type earlyBlob struct {
	size int64
	done chan struct{}
	data []byte
	err  error
}

// errNotFetched is a hinted fetch's outcome until it has one (a fetch
// that panicked keeps it).
var errNotFetched = errors.New("not fetched")

// prefetchBlobs starts fetching the first MaxProvenanceHints distinct
// hints, smallest first, as long as they fit MaxProvenanceHintBytes
// altogether; each is bounded and verified as FetchSmall bounds them. A
// hint of no size, or of more than MaxSmallFile, is not fetched.
func prefetchBlobs(ctx context.Context, repo ReadOnlyRepository, hints []ocispec.Descriptor) *earlyBlobs {
	e := &earlyBlobs{repo: repo, blobs: map[digest.Digest]*earlyBlob{}}
	var budget int64 = MaxProvenanceHintBytes
	for _, h := range smallestFirst(hints) {
		if len(e.blobs) == MaxProvenanceHints {
			break
		}
		if _, dup := e.blobs[h.Digest]; dup || h.Size <= 0 || h.Size > min(budget, MaxSmallFile) {
			continue
		}
		budget -= h.Size
		b := &earlyBlob{size: h.Size, done: make(chan struct{}), err: errNotFetched}
		e.blobs[h.Digest] = b
		desc := ocispec.Descriptor{MediaType: "application/octet-stream", Digest: h.Digest, Size: h.Size}
		GoRecovered(&e.g, func() error {
			defer close(b.done)
			data, err := FetchSmall(ctx, repo, desc)
			b.data, b.err = data, err
			return nil
		})
	}
	return e
}

// smallestFirst are hints ordered by size (a stable sort of a copy): the
// files of an honest provenance are small, so a byte budget spent on
// the smallest keeps them.
func smallestFirst(hints []ocispec.Descriptor) []ocispec.Descriptor {
	out := slices.Clone(hints)
	slices.SortStableFunc(out, func(a, b ocispec.Descriptor) int { return cmp.Compare(a.Size, b.Size) })
	return out
}

// fetch is desc's content: the hinted fetch of its digest and size when
// one succeeded, otherwise fetched now.
func (e *earlyBlobs) fetch(ctx context.Context, desc ocispec.Descriptor) ([]byte, error) {
	if b, ok := e.blobs[desc.Digest]; ok && b.size == desc.Size {
		select {
		case <-b.done:
			if b.err == nil {
				return b.data, nil
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return FetchSmall(ctx, e.repo, desc)
}

// stop cancels the hinted fetches no one used (cancel ends their context)
// and waits for them to end.
func (e *earlyBlobs) stop(cancel context.CancelFunc) {
	cancel()
	_ = e.g.Wait() // each fetch's outcome is its earlyBlob's
}
