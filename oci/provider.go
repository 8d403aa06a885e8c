package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ProviderPackage is one platform's zip, already verified by the caller.
type ProviderPackage struct {
	Platform names.Platform
	// Zip describes the original zip; its digest is the zh: hash.
	Zip  ocispec.Descriptor
	Open func() (io.ReadCloser, error)
}

// BuildProvider assembles a provider version exactly as OpenTofu's
// oci_mirror reads it (docs/reference.md §1): one image manifest per platform with
// the empty config and a single archive/zip layer, under an image index with
// artifactType application/vnd.opentofu.provider. When provenance is given,
// its manifest is added to the index with oci-tofu's own artifactType, which
// OpenTofu skips.
//
// The index carries a summary of the provenance as annotations (plugin
// protocols, signing key IDs), so a version listing can tell what a
// version offers from its index alone; OpenTofu ignores them.
func BuildProvider(pkgs []ProviderPackage, prov *ProvenanceArtifact) (*Artifact, error) {
	return buildProvider(pkgs, prov, true)
}

// BuildProviderUnannotated builds the index as oci-tofu wrote it before it
// annotated indexes with the provenance summary: a re-push compares with it
// too, so releases pushed by earlier versions stay up to date.
func BuildProviderUnannotated(pkgs []ProviderPackage, prov *ProvenanceArtifact) (*Artifact, error) {
	return buildProvider(pkgs, prov, false)
}

// Index annotations summarising the provenance.
const (
	// AnnotationProtocols lists the plugin protocol versions, comma-separated.
	AnnotationProtocols = "vnd.oci-tofu.provider.protocols"
	// AnnotationSigningKeys lists the IDs of the keys whose signature over
	// SHA256SUMS was verified, comma-separated; absent when unsigned.
	AnnotationSigningKeys = "vnd.oci-tofu.provider.signing-keys"
)

func buildProvider(pkgs []ProviderPackage, prov *ProvenanceArtifact, annotate bool) (*Artifact, error) {
	if len(pkgs) == 0 {
		return nil, errors.New("a provider version needs at least one platform")
	}
	if len(pkgs) >= MaxIndexEntries {
		return nil, fmt.Errorf("%d platforms: a provider version may have at most %d", len(pkgs), MaxIndexEntries-1)
	}
	pkgs = append([]ProviderPackage(nil), pkgs...)
	slices.SortFunc(pkgs, func(a, b ProviderPackage) int { return names.ComparePlatforms(a.Platform, b.Platform) })
	a := &Artifact{Blobs: []Blob{emptyConfig()}}
	idx := ocispec.Index{ArtifactType: ArtifactTypeProvider}
	for i, p := range pkgs {
		if i > 0 && pkgs[i-1].Platform == p.Platform {
			return nil, fmt.Errorf("platform %s given twice", p.Platform)
		}
		m, err := ProviderPlatformManifest(p.Zip)
		if err != nil {
			return nil, err
		}
		layer := p.Zip
		layer.MediaType = MediaTypeZip
		a.Blobs = append(a.Blobs, Blob{Descriptor: layer, Open: p.Open})
		a.Manifests = append(a.Manifests, m)
		d := m.Descriptor
		d.Platform = &ocispec.Platform{OS: p.Platform.OS, Architecture: p.Platform.Arch}
		idx.Manifests = append(idx.Manifests, d)
	}
	if prov != nil {
		a.Blobs = append(a.Blobs, prov.Blobs...)
		a.Manifests = append(a.Manifests, prov.Manifest)
		idx.Manifests = append(idx.Manifests, prov.Manifest.Descriptor)
		if annotate {
			idx.Annotations = prov.summary()
		}
	}
	root, err := EncodeIndex(idx)
	if err != nil {
		return nil, err
	}
	a.Manifests = append(a.Manifests, root)
	return a, nil
}

// ProviderPlatformManifest is the platform manifest BuildProvider makes
// for a zip: the empty config and the zip as its one archive/zip layer. It
// depends on the zip's descriptor alone, so what describes a platform (an
// SBOM, a referrer of this manifest) can name it before anything is
// written.
func ProviderPlatformManifest(zip ocispec.Descriptor) (Manifest, error) {
	layer := zip
	layer.MediaType = MediaTypeZip
	return EncodeManifest(ocispec.Manifest{
		ArtifactType: ArtifactTypeProviderTarget,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{layer},
	})
}

// ProviderVersion is a provider index as read from a repository.
type ProviderVersion struct {
	Version   names.Version
	Index     ocispec.Descriptor
	Platforms map[names.Platform]ocispec.Descriptor
	// Provenance is the oci-tofu provenance manifest, when present.
	Provenance *ocispec.Descriptor
	// Summary is the provenance summary the index carries, when it has
	// one (indexes pushed by earlier versions of oci-tofu do not).
	Summary *ProvenanceSummary
}

// ProvenanceSummary is what an index's annotations say of its provenance.
type ProvenanceSummary struct {
	Protocols     []string
	SigningKeyIDs []string
}

// ListVersions lists the canonical version tags of a repository, sorted
// (read with ListTagsBefore: the tag schemas' tags are not read where the
// registry's order allows). A repository that does not exist has no
// versions and reports errdef.ErrNotFound.
func ListVersions(ctx context.Context, repo ReadOnlyRepository) (names.VersionList, error) {
	tags, err := ListTagsBefore(ctx, repo, TagSchemaTags, nil)
	if err != nil {
		return nil, err
	}
	var list names.VersionList
	for _, t := range tags {
		if v, ok := names.VersionFromTag(t); ok {
			list = append(list, v)
		}
	}
	list.Sort()
	return list, nil
}

// ListTags reads every tag of a repository, following the registry's
// pages, within bounds a hostile or broken registry cannot stretch: at
// most MaxTags tags and MaxTagPages pages, and every page must bring a
// tag not seen before (a paging loop ends at its first repeat).
func ListTags(ctx context.Context, repo ReadOnlyRepository) ([]string, error) {
	return ListTagsPaged(ctx, repo, nil)
}

// ListTagsPaged is ListTags, calling page (when not nil) with the tags
// each page adds as soon as that page is read and checked, while the
// next page is still to be read: a caller can start on the first tags
// before the list ends. page must not block.
func ListTagsPaged(ctx context.Context, repo ReadOnlyRepository, page func(added []string)) ([]string, error) {
	return ListTagsBefore(ctx, repo, "", page)
}

// pastBound is how many tags past its bound, in lexical order,
// ListTagsBefore reads before it takes the list to be ordered.
const pastBound = 256

// TagSchemaTags is where, in lexical order, the tags of the tag schemas
// begin: sha256-<hex> (the OCI 1.1 referrers tag schema's index) and
// sha256-<hex>.sig, .att (cosign's). On a registry without the referrers
// API every signed, attested or SBOM-carrying manifest has them: a
// provider version of 15 platforms with SBOMs and attestations has over
// 30 such tags beside its one version tag (docs/artifacts.md).
const TagSchemaTags = "sha256-"

// ListTagsBefore is ListTagsPaged for a reader that wants only the tags
// lexically before bound ("": every tag): version tags, which begin with
// a digit, and pointers such as latest, not TagSchemaTags. It returns
// those tags only, and stops reading pages once the registry's list has
// run pastBound tags past bound in order: the tag list is lexically
// ordered (the distribution spec's "lexically sorted list" that last=
// pages through; Distribution, Harbor and zot sort it), which is checked
// on every tag read, bytewise and across pages. A registry whose list is
// seen out of order is read to its end, as ListTags reads it; one listing
// tags as they were made (a version, then its sha256-<hex> tags, then the
// next version) shows it long before pastBound tag-schema tags in a row.
func ListTagsBefore(ctx context.Context, repo ReadOnlyRepository, bound string, page func(added []string)) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	pages, read, past := 0, 0, 0
	ordered, prev := true, ""
	errPassed := errors.New("the tag list has passed its bound")
	err := repo.Tags(ctx, "", func(tags []string) error {
		pages++
		first := len(out)
		fresh := false
		for _, t := range tags {
			if ordered && read > 0 && t <= prev {
				ordered = false
			}
			read++
			prev = t
			if bound != "" && t >= bound {
				past++
			}
			if !seen[t] {
				seen[t], fresh = true, true
				if bound == "" || t < bound {
					out = append(out, t)
				}
			}
		}
		switch {
		case read > MaxTags:
			return Beyond("the repository lists more than %d tags", MaxTags)
		case pages > MaxTagPages:
			return Beyond("the registry's tag list runs to more than %d pages", MaxTagPages)
		case !fresh && len(tags) > 0:
			return Invalid("the registry's tag list pages in a loop (page %d repeats earlier tags)", pages)
		}
		if page != nil && len(out) > first {
			page(out[first:len(out):len(out)])
		}
		if ordered && past >= pastBound {
			return errPassed // every tag before bound has been listed
		}
		return nil
	})
	if errors.Is(err, errPassed) {
		err = nil
	}
	return out, err
}

// ResolveProvider reads the index a version tag names (in one round trip
// where the registry allows), applying OpenTofu's checks (docs/reference.md §1).
func ResolveProvider(ctx context.Context, repo ReadOnlyRepository, v names.Version) (*ProviderVersion, error) {
	desc, b, err := FetchReference(ctx, repo, names.TagForVersion(v))
	if err != nil {
		return nil, err
	}
	pv, err := ParseProviderIndex(desc, b)
	if err != nil {
		return nil, err
	}
	pv.Version = v
	return pv, nil
}

// ReadProviderIndex reads and checks a provider index.
func ReadProviderIndex(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) (*ProviderVersion, error) {
	if err := checkProviderDescriptor(desc); err != nil {
		return nil, err
	}
	b, err := FetchManifest(ctx, repo, desc)
	if err != nil {
		return nil, err
	}
	return ParseProviderIndex(desc, b)
}

// checkProviderDescriptor: a provider version is an image index.
func checkProviderDescriptor(desc ocispec.Descriptor) error {
	if desc.MediaType != ocispec.MediaTypeImageIndex {
		return Invalid("tag points to %q, but a provider version must be an image index", desc.MediaType)
	}
	return nil
}

// ParseProviderIndex checks a provider index's body as OpenTofu does.
func ParseProviderIndex(desc ocispec.Descriptor, b []byte) (*ProviderVersion, error) {
	if err := checkProviderDescriptor(desc); err != nil {
		return nil, err
	}
	var idx ocispec.Index
	if err := decodeIndex(b, &idx); err != nil { // encoding/json's decision (index_decode.go)
		return nil, Invalid("index %s is not valid JSON: %v", desc.Digest, err)
	}
	if idx.MediaType != ocispec.MediaTypeImageIndex {
		return nil, Invalid("index %s has mediaType %q", desc.Digest, idx.MediaType)
	}
	if idx.ArtifactType != ArtifactTypeProvider {
		return nil, Invalid("index %s has artifactType %q, want %q", desc.Digest, idx.ArtifactType, ArtifactTypeProvider)
	}
	if len(idx.Manifests) > MaxIndexEntries {
		return nil, Beyond("index %s has %d manifests, more than the %d oci-tofu reads", desc.Digest, len(idx.Manifests), MaxIndexEntries)
	}
	pv := &ProviderVersion{Index: desc, Platforms: make(map[names.Platform]ocispec.Descriptor, len(idx.Manifests))}
	for _, d := range idx.Manifests {
		if err := pv.add(d); err != nil {
			return nil, err
		}
	}
	if pv.Provenance != nil {
		pv.Summary = parseSummary(idx.Annotations)
	}
	pv.Index.MediaType = ocispec.MediaTypeImageIndex // the same string, shared (see add)
	return pv, nil
}

// add takes one descriptor of a provider index as OpenTofu would.
func (pv *ProviderVersion) add(d ocispec.Descriptor) error {
	switch d.ArtifactType {
	case ArtifactTypeProviderTarget:
	case ArtifactTypeProvenance:
		if pv.Provenance == nil && d.MediaType == ocispec.MediaTypeImageManifest && validDigest(d.Digest) == nil {
			d.MediaType, d.ArtifactType = ocispec.MediaTypeImageManifest, ArtifactTypeProvenance
			pv.Provenance = &d
		}
		return nil
	default:
		return nil // OpenTofu skips descriptors of other artifact types
	}
	if err := validDigest(d.Digest); err != nil {
		return Invalid("index %s names a manifest by an Invalid digest %q: OpenTofu could not fetch it", pv.Index.Digest, d.Digest)
	}
	if d.MediaType != ocispec.MediaTypeImageManifest {
		return Invalid("platform descriptor %s has mediaType %q", d.Digest, d.MediaType)
	}
	if d.Platform == nil || d.Platform.OS == "" || d.Platform.Architecture == "" {
		return Invalid("platform descriptor %s lacks a platform", d.Digest)
	}
	if d.Platform.OSVersion != "" {
		return nil // OpenTofu never selects these
	}
	p, ok := names.PlatformOf(d.Platform.OS, d.Platform.Architecture)
	if !ok {
		// Not a Go platform name ("linux/../x", "Linux"): OpenTofu never
		// selects it, and it must not become a file name or URL.
		return nil
	}
	if _, dup := pv.Platforms[p]; dup {
		return Invalid("index %s has more than one manifest for %s: OpenTofu refuses it as ambiguous", pv.Index.Digest, p)
	}
	// The constants hold the same strings; sharing them spares memory when
	// thousands of indexes are cached.
	d.MediaType, d.ArtifactType = ocispec.MediaTypeImageManifest, ArtifactTypeProviderTarget
	pv.Platforms[p] = d
	return nil
}

// validDigest is d.Validate(), without its regular expression for the
// usual sha256 digest: a listing of thousands of versions checks tens of
// thousands of digests, and the expression was a tenth of its CPU.
func validDigest(d digest.Digest) error {
	if hex, ok := strings.CutPrefix(string(d), "sha256:"); ok && len(hex) == 64 && lowerHex(hex) {
		return nil
	}
	return d.Validate()
}

// lowerHex reports whether s is lower-case hexadecimal digits only.
func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func parseSummary(a map[string]string) *ProvenanceSummary {
	protocols, ok := a[AnnotationProtocols]
	if !ok {
		return nil
	}
	return &ProvenanceSummary{Protocols: splitList(protocols), SigningKeyIDs: splitList(a[AnnotationSigningKeys])}
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// ReadProviderPackage reads a platform manifest and returns its zip layer,
// applying OpenTofu's checks.
func ReadProviderPackage(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) (ocispec.Descriptor, error) {
	m, err := FetchImageManifest(ctx, repo, desc)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return platformZip(desc, m)
}

// platformZip applies OpenTofu's checks to a platform manifest.
func platformZip(desc ocispec.Descriptor, m ocispec.Manifest) (ocispec.Descriptor, error) {
	if m.MediaType != desc.MediaType {
		return ocispec.Descriptor{}, Invalid("manifest %s has mediaType %q, its descriptor says %q", desc.Digest, m.MediaType, desc.MediaType)
	}
	if m.ArtifactType != desc.ArtifactType {
		return ocispec.Descriptor{}, Invalid("manifest %s has artifactType %q, its descriptor says %q", desc.Digest, m.ArtifactType, desc.ArtifactType)
	}
	return SingleZipLayer(m)
}

// SingleZipLayer returns the one archive/zip layer of m.
func SingleZipLayer(m ocispec.Manifest) (ocispec.Descriptor, error) {
	var found []ocispec.Descriptor
	for _, l := range m.Layers {
		if l.MediaType == MediaTypeZip {
			found = append(found, l)
		}
	}
	switch len(found) {
	case 0:
		return ocispec.Descriptor{}, Invalid("manifest has no %s layer", MediaTypeZip)
	case 1:
		if found[0].Digest.Validate() != nil || found[0].Digest.Algorithm() != digest.SHA256 {
			return ocispec.Descriptor{}, Invalid("zip layer digest %q is not a valid sha256 digest", found[0].Digest)
		}
		return found[0], nil
	default:
		return ocispec.Descriptor{}, Invalid("manifest has %d %s layers: OpenTofu refuses it as ambiguous", len(found), MediaTypeZip)
	}
}

// FetchManifest reads a manifest or index, refusing anything over
// MaxManifestSize and verifying its digest.
func FetchManifest(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) ([]byte, error) {
	if err := CheckManifestSize(desc); err != nil {
		return nil, err
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", desc.Digest, err)
	}
	return b, nil
}

// CheckManifestSize refuses a manifest over MaxManifestSize (OpenTofu's
// limit) before it is read.
func CheckManifestSize(desc ocispec.Descriptor) error {
	if desc.Size > MaxManifestSize || desc.Size < 0 {
		return Invalid("manifest %s of %d bytes exceeds the %d MiB limit", desc.Digest, desc.Size, MaxManifestSize>>20)
	}
	return nil
}

// manifestMediaTypes are the media types a registry answers manifest
// requests with; anything else is a bad answer, not a bad artifact.
var manifestMediaTypes = map[string]bool{
	ocispec.MediaTypeImageManifest: true, ocispec.MediaTypeImageIndex: true,
	"application/vnd.docker.distribution.manifest.v2+json":      true,
	"application/vnd.docker.distribution.manifest.list.v2+json": true,
	"application/vnd.docker.distribution.manifest.v1+json":      true,
	"application/vnd.docker.distribution.manifest.v1+prettyjws": true,
}

// FetchReference reads the manifest or index a tag or digest names, in
// one round trip where the repository can (a registry answers a GET by
// tag with the body and its digest), bounded by MaxManifestSize and
// checked against its digest.
func FetchReference(ctx context.Context, repo ReadOnlyRepository, reference string) (ocispec.Descriptor, []byte, error) {
	rf, ok := repo.(registry.ReferenceFetcher)
	if !ok {
		desc, err := repo.Resolve(ctx, reference)
		if err != nil {
			return desc, nil, err
		}
		b, err := FetchManifest(ctx, repo, desc)
		return desc, b, err
	}
	desc, rc, err := rf.FetchReference(ctx, reference)
	if err != nil {
		return desc, nil, err
	}
	defer rc.Close()
	if !manifestMediaTypes[desc.MediaType] {
		return desc, nil, fmt.Errorf("the registry answered a manifest request for %s with content type %q, which is no manifest type", reference, desc.MediaType)
	}
	if err := CheckManifestSize(desc); err != nil {
		return desc, nil, err
	}
	b, err := content.ReadAll(rc, desc)
	if err != nil {
		return desc, nil, fmt.Errorf("fetching %s: %w", reference, err)
	}
	return desc, b, nil
}

// FetchImageManifest reads and decodes an image manifest (bounded and
// digest-checked by FetchManifest).
func FetchImageManifest(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) (ocispec.Manifest, error) {
	b, err := FetchManifest(ctx, repo, desc)
	if err != nil {
		return ocispec.Manifest{}, err
	}
	return DecodeManifest(desc, b)
}

// DecodeManifest decodes an image manifest's body.
func DecodeManifest(desc ocispec.Descriptor, b []byte) (ocispec.Manifest, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return m, Invalid("manifest %s is not valid JSON: %v", desc.Digest, err)
	}
	return m, nil
}

// SortedPlatforms lists the version's platforms in name order.
func (pv *ProviderVersion) SortedPlatforms() []names.Platform {
	out := make([]names.Platform, 0, len(pv.Platforms))
	for p := range pv.Platforms {
		out = append(out, p)
	}
	slices.SortFunc(out, names.ComparePlatforms)
	return out
}
