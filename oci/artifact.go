package oci

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Blob is content to upload: its descriptor and a way to (re)open it, so
// that large files stream from disk instead of living in memory.
type Blob struct {
	Descriptor ocispec.Descriptor
	Open       func() (io.ReadCloser, error)
}

// Manifest is an encoded manifest or index with its descriptor.
type Manifest struct {
	Descriptor ocispec.Descriptor
	Bytes      []byte
}

// Artifact is everything one push writes: blobs first, then manifests in
// order (children before parents); the last manifest is the root that tags
// point to.
type Artifact struct {
	Blobs     []Blob
	Manifests []Manifest
}

// Root is the descriptor that tags point to.
func (a *Artifact) Root() ocispec.Descriptor {
	return a.Manifests[len(a.Manifests)-1].Descriptor
}

// BytesBlob is a small in-memory blob.
func BytesBlob(mediaType string, data []byte, annotations map[string]string) Blob {
	desc := ocispec.Descriptor{
		MediaType:   mediaType,
		Digest:      digest.FromBytes(data),
		Size:        int64(len(data)),
		Annotations: annotations,
	}
	return Blob{Descriptor: desc, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}
}

// EmptyConfig is the empty config blob ({}) platform manifests name: an
// upload that writes a manifest ahead (Upload.Manifest) writes it first.
func EmptyConfig() Blob { return emptyConfig() }

// emptyConfig is the OCI empty descriptor ({}), used as config where the
// config carries nothing (OpenTofu does not read it).
func emptyConfig() Blob {
	desc := ocispec.DescriptorEmptyJSON
	return Blob{Descriptor: desc, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(desc.Data)), nil }}
}

// EncodeManifest encodes an image manifest deterministically (no
// timestamps, fixed field order) so the same inputs give the same digest.
func EncodeManifest(m ocispec.Manifest) (Manifest, error) {
	m.Versioned = specs.Versioned{SchemaVersion: 2}
	m.MediaType = ocispec.MediaTypeImageManifest
	return encode(m.MediaType, m.ArtifactType, m)
}

// EncodeIndex encodes an image index deterministically.
func EncodeIndex(idx ocispec.Index) (Manifest, error) {
	idx.Versioned = specs.Versioned{SchemaVersion: 2}
	idx.MediaType = ocispec.MediaTypeImageIndex
	return encode(idx.MediaType, idx.ArtifactType, idx)
}

func encode(mediaType, artifactType string, v any) (Manifest, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Manifest{}, err
	}
	if len(b) > MaxManifestSize {
		return Manifest{}, fmt.Errorf("manifest of %d bytes exceeds OpenTofu's %d MiB limit", len(b), MaxManifestSize>>20)
	}
	return Manifest{
		Descriptor: ocispec.Descriptor{
			MediaType:    mediaType,
			ArtifactType: artifactType,
			Digest:       digest.FromBytes(b),
			Size:         int64(len(b)),
		},
		Bytes: b,
	}, nil
}
