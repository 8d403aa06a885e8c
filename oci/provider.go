package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/oci-tofu/oci-tofu/oci/names"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
)

// ProviderPackage is one platform's zip, already verified by the caller.
type ProviderPackage struct {
	Platform names.Platform
	// Zip describes the original zip; its digest is the zh: hash.
	Zip  ocispec.Descriptor
	Open func() (io.ReadCloser, error)
}

// BuildProvider assembles a provider version exactly as OpenTofu's
// oci_mirror reads it (REFERENCE §1): one image manifest per platform with
// the empty config and a single archive/zip layer, under an image index with
// artifactType application/vnd.opentofu.provider. When provenance is given,
// its manifest is added to the index with oci-tofu's own artifactType, which
// OpenTofu skips.
func BuildProvider(pkgs []ProviderPackage, prov *ProvenanceArtifact) (*Artifact, error) {
	if len(pkgs) == 0 {
		return nil, errors.New("a provider version needs at least one platform")
	}
	pkgs = append([]ProviderPackage(nil), pkgs...)
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].Platform.String() < pkgs[j].Platform.String() })
	a := &Artifact{Blobs: []Blob{emptyConfig()}}
	idx := ocispec.Index{ArtifactType: ArtifactTypeProvider}
	for i, p := range pkgs {
		if i > 0 && pkgs[i-1].Platform == p.Platform {
			return nil, fmt.Errorf("platform %s given twice", p.Platform)
		}
		layer := p.Zip
		layer.MediaType = MediaTypeZip
		a.Blobs = append(a.Blobs, Blob{Descriptor: layer, Open: p.Open})
		m, err := EncodeManifest(ocispec.Manifest{
			ArtifactType: ArtifactTypeProviderTarget,
			Config:       ocispec.DescriptorEmptyJSON,
			Layers:       []ocispec.Descriptor{layer},
		})
		if err != nil {
			return nil, err
		}
		a.Manifests = append(a.Manifests, m)
		d := m.Descriptor
		d.Platform = &ocispec.Platform{OS: p.Platform.OS, Architecture: p.Platform.Arch}
		idx.Manifests = append(idx.Manifests, d)
	}
	if prov != nil {
		a.Blobs = append(a.Blobs, prov.Blobs...)
		a.Manifests = append(a.Manifests, prov.Manifest)
		idx.Manifests = append(idx.Manifests, prov.Manifest.Descriptor)
	}
	root, err := EncodeIndex(idx)
	if err != nil {
		return nil, err
	}
	a.Manifests = append(a.Manifests, root)
	return a, nil
}

// ProviderVersion is a provider index as read from a repository.
type ProviderVersion struct {
	Version   names.Version
	Index     ocispec.Descriptor
	Platforms map[names.Platform]ocispec.Descriptor
	// Provenance is the oci-tofu provenance manifest, when present.
	Provenance *ocispec.Descriptor
}

// ListVersions lists the canonical version tags of a repository, sorted.
// A repository that does not exist has no versions and reports
// errdef.ErrNotFound.
func ListVersions(ctx context.Context, repo ReadOnlyRepository) (names.VersionList, error) {
	var list names.VersionList
	err := repo.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			if v, ok := names.VersionFromTag(t); ok {
				list = append(list, v)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	list.Sort()
	return list, nil
}

// ResolveProvider resolves a version tag and reads its index as OpenTofu
// would, applying the same checks (REFERENCE §1).
func ResolveProvider(ctx context.Context, repo ReadOnlyRepository, v names.Version) (*ProviderVersion, error) {
	desc, err := repo.Resolve(ctx, names.TagForVersion(v))
	if err != nil {
		return nil, err
	}
	pv, err := ReadProviderIndex(ctx, repo, desc)
	if err != nil {
		return nil, err
	}
	pv.Version = v
	return pv, nil
}

// ReadProviderIndex reads and checks a provider index.
func ReadProviderIndex(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) (*ProviderVersion, error) {
	if desc.MediaType != ocispec.MediaTypeImageIndex {
		return nil, invalid("tag points to %q, but a provider version must be an image index", desc.MediaType)
	}
	b, err := FetchManifest(ctx, repo, desc)
	if err != nil {
		return nil, err
	}
	var idx ocispec.Index
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, invalid("index %s is not valid JSON: %v", desc.Digest, err)
	}
	if idx.MediaType != ocispec.MediaTypeImageIndex {
		return nil, invalid("index %s has mediaType %q", desc.Digest, idx.MediaType)
	}
	if idx.ArtifactType != ArtifactTypeProvider {
		return nil, invalid("index %s has artifactType %q, want %q", desc.Digest, idx.ArtifactType, ArtifactTypeProvider)
	}
	pv := &ProviderVersion{Index: desc, Platforms: map[names.Platform]ocispec.Descriptor{}}
	for _, d := range idx.Manifests {
		switch d.ArtifactType {
		case ArtifactTypeProviderTarget:
		case ArtifactTypeProvenance:
			if pv.Provenance == nil && d.MediaType == ocispec.MediaTypeImageManifest {
				d := d
				pv.Provenance = &d
			}
			continue
		default:
			continue // OpenTofu skips descriptors of other artifact types
		}
		if d.MediaType != ocispec.MediaTypeImageManifest {
			return nil, invalid("platform descriptor %s has mediaType %q", d.Digest, d.MediaType)
		}
		if d.Platform == nil || d.Platform.OS == "" || d.Platform.Architecture == "" {
			return nil, invalid("platform descriptor %s lacks a platform", d.Digest)
		}
		if d.Platform.OSVersion != "" {
			continue // OpenTofu never selects these
		}
		p := names.Platform{OS: d.Platform.OS, Arch: d.Platform.Architecture}
		if _, dup := pv.Platforms[p]; dup {
			return nil, invalid("index %s has more than one manifest for %s: OpenTofu refuses it as ambiguous", desc.Digest, p)
		}
		pv.Platforms[p] = d
	}
	return pv, nil
}

// ReadProviderPackage reads a platform manifest and returns its zip layer,
// applying OpenTofu's checks.
func ReadProviderPackage(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) (ocispec.Descriptor, error) {
	m, err := fetchImageManifest(ctx, repo, desc)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	if m.MediaType != desc.MediaType {
		return ocispec.Descriptor{}, invalid("manifest %s has mediaType %q, its descriptor says %q", desc.Digest, m.MediaType, desc.MediaType)
	}
	if m.ArtifactType != desc.ArtifactType {
		return ocispec.Descriptor{}, invalid("manifest %s has artifactType %q, its descriptor says %q", desc.Digest, m.ArtifactType, desc.ArtifactType)
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
		return ocispec.Descriptor{}, invalid("manifest has no %s layer", MediaTypeZip)
	case 1:
		if found[0].Digest.Algorithm() != "sha256" || found[0].Digest.Validate() != nil {
			return ocispec.Descriptor{}, invalid("zip layer digest %q is not a valid sha256 digest", found[0].Digest)
		}
		return found[0], nil
	default:
		return ocispec.Descriptor{}, invalid("manifest has %d %s layers: OpenTofu refuses it as ambiguous", len(found), MediaTypeZip)
	}
}

// FetchManifest reads a manifest or index, refusing anything over
// MaxManifestSize and verifying its digest.
func FetchManifest(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) ([]byte, error) {
	if desc.Size > MaxManifestSize || desc.Size < 0 {
		return nil, invalid("manifest %s of %d bytes exceeds the %d MiB limit", desc.Digest, desc.Size, MaxManifestSize>>20)
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", desc.Digest, err)
	}
	return b, nil
}

// fetchImageManifest reads and decodes an image manifest (bounded and
// digest-checked by FetchManifest).
func fetchImageManifest(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) (ocispec.Manifest, error) {
	var m ocispec.Manifest
	b, err := FetchManifest(ctx, repo, desc)
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, invalid("manifest %s is not valid JSON: %v", desc.Digest, err)
	}
	return m, nil
}

// SortedPlatforms lists the version's platforms in name order.
func (pv *ProviderVersion) SortedPlatforms() []names.Platform {
	out := make([]names.Platform, 0, len(pv.Platforms))
	for p := range pv.Platforms {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
