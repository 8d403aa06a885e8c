package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// OpenTofu release artifacts (the TofuDL mirror): one image manifest per
// version whose layers are the release files, each titled with its name.
const (
	ArtifactTypeTofuRelease    = "application/vnd.oci-tofu.tofu-release.v1"
	MediaTypeTofuReleaseConfig = "application/vnd.oci-tofu.tofu-release.config.v1+json"
	MediaTypeReleaseFile       = "application/octet-stream"
)

// TofuRelease is the config of a tofu release artifact: the version and the
// list of files, in name order.
type TofuRelease struct {
	Version string            `json:"version"`
	Files   []TofuReleaseFile `json:"files"`
}

// TofuReleaseFile is one file of a release.
type TofuReleaseFile struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// BuildTofuRelease assembles a release artifact from its files (blobs whose
// descriptors carry the file name as title). `oras pull` on the result
// writes the release back, file by file.
func BuildTofuRelease(version string, files []Blob) (*Artifact, error) {
	files = append([]Blob(nil), files...)
	sort.Slice(files, func(i, j int) bool {
		return files[i].Descriptor.Annotations[AnnotationTitle] < files[j].Descriptor.Annotations[AnnotationTitle]
	})
	cfg := TofuRelease{Version: version}
	var layers []ocispec.Descriptor
	for _, f := range files {
		name := f.Descriptor.Annotations[AnnotationTitle]
		if name == "" || strings.ContainsAny(name, "/\\") {
			return nil, fmt.Errorf("release file without a plain name: %q", name)
		}
		cfg.Files = append(cfg.Files, TofuReleaseFile{Name: name, Size: f.Descriptor.Size, SHA256: f.Descriptor.Digest.Encoded()})
		layers = append(layers, f.Descriptor)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	config := BytesBlob(MediaTypeTofuReleaseConfig, b, nil)
	m, err := EncodeManifest(ocispec.Manifest{ArtifactType: ArtifactTypeTofuRelease, Config: config.Descriptor, Layers: layers})
	if err != nil {
		return nil, err
	}
	return &Artifact{Blobs: append([]Blob{config}, files...), Manifests: []Manifest{m}}, nil
}

// ReadTofuRelease reads a release artifact: its config and the descriptor
// of each file by name.
func ReadTofuRelease(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) (*TofuRelease, map[string]ocispec.Descriptor, error) {
	if err := checkTofuDescriptor(desc); err != nil {
		return nil, nil, err
	}
	b, err := FetchManifest(ctx, repo, desc)
	if err != nil {
		return nil, nil, err
	}
	return ReadTofuReleaseBody(ctx, repo, desc, b)
}

// checkTofuDescriptor: an OpenTofu release is an image manifest.
func checkTofuDescriptor(desc ocispec.Descriptor) error {
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return Invalid("%s has mediaType %q, not an OCI image manifest", desc.Digest, desc.MediaType)
	}
	return nil
}

// ReadTofuReleaseBody is ReadTofuRelease for a manifest already read.
func ReadTofuReleaseBody(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor, b []byte) (*TofuRelease, map[string]ocispec.Descriptor, error) {
	if err := checkTofuDescriptor(desc); err != nil {
		return nil, nil, err
	}
	m, err := DecodeManifest(desc, b)
	if err != nil {
		return nil, nil, err
	}
	if m.ArtifactType != ArtifactTypeTofuRelease || m.Config.MediaType != MediaTypeTofuReleaseConfig {
		return nil, nil, Invalid("manifest %s is not an OpenTofu release artifact", desc.Digest)
	}
	cb, err := FetchSmall(ctx, repo, m.Config)
	if err != nil {
		return nil, nil, err
	}
	var rel TofuRelease
	if err := json.Unmarshal(cb, &rel); err != nil {
		return nil, nil, Invalid("release config %s: %v", m.Config.Digest, err)
	}
	files := map[string]ocispec.Descriptor{}
	for _, l := range m.Layers {
		name := l.Annotations[AnnotationTitle]
		if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
			return nil, nil, Invalid("release layer %s has no plain file name", l.Digest)
		}
		files[name] = l
	}
	return &rel, files, nil
}
