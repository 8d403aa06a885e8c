package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// metadata describes the build: it goes into labels and annotations.
type metadata struct {
	Version  string
	Revision string // VCS revision; omitted when empty
	Source   string // URL of the source repository
	Created  time.Time
}

// annotations are the OCI pre-defined annotations of the image, used as
// config labels too (where docker inspect and registries' UIs show them).
func (m metadata) annotations() map[string]string {
	a := map[string]string{
		ocispec.AnnotationTitle:       "oci-tofu",
		ocispec.AnnotationDescription: "OpenTofu and Terraform providers and modules from OCI registries: oci-tofu serve",
		ocispec.AnnotationSource:      m.Source,
		ocispec.AnnotationVersion:     m.Version,
		ocispec.AnnotationCreated:     m.Created.UTC().Format(time.RFC3339),
	}
	if m.Revision != "" {
		a[ocispec.AnnotationRevision] = m.Revision
	}
	return a
}

// blob is a content-addressed piece of the image: its descriptor and bytes.
type blob struct {
	Desc ocispec.Descriptor
	Data []byte
}

// jsonBlob marshals v as a blob of the given media type.
func jsonBlob(mediaType string, v any) (blob, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return blob{}, err
	}
	return blob{Desc: ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}, Data: b}, nil
}

// imageConfig is the runtime configuration of one platform's image: the
// non-root user, the binary as entry point with `serve` as default
// command (configured through OCI_TOFU_* variables), the trust store, and
// the proxy's port.
func imageConfig(p platform, m metadata, layers []layer) ocispec.Image {
	created := m.Created.UTC()
	diffIDs := make([]digest.Digest, len(layers))
	for i, l := range layers {
		diffIDs[i] = l.DiffID
	}
	return ocispec.Image{
		Created:  &created,
		Platform: ocispec.Platform{OS: p.OS, Architecture: p.Arch, Variant: p.Variant},
		Config: ocispec.ImageConfig{
			User:         imageUser(),
			ExposedPorts: map[string]struct{}{"8443/tcp": {}},
			Env: []string{
				"PATH=/usr/local/bin:/usr/bin:/bin",
				"SSL_CERT_FILE=" + caBundlePath,
				"HOME=" + userHome,
				"OCI_TOFU_LOG_FORMAT=json",
			},
			Entrypoint: []string{binaryPath},
			Cmd:        []string{"serve"},
			WorkingDir: userHome,
			Labels:     m.annotations(),
			StopSignal: "SIGTERM",
		},
		RootFS: ocispec.RootFS{Type: "layers", DiffIDs: diffIDs},
		History: []ocispec.History{
			{Created: &created, CreatedBy: "oci-tofu tools/image: /etc/passwd, /etc/group, CA certificates, /home/nonroot, /tmp"},
			{Created: &created, CreatedBy: "oci-tofu tools/image: " + binaryPath + " " + m.Version + " (" + p.String() + ")"},
		},
	}
}

// platformImage is one platform's manifest with the blobs it references.
type platformImage struct {
	Platform platform
	Manifest blob
	Config   blob
	Layers   []layer
}

// assemblePlatform writes the config and manifest of one platform's image
// from its layers (base first, binary last).
func assemblePlatform(p platform, m metadata, layers []layer) (platformImage, error) {
	config, err := jsonBlob(ocispec.MediaTypeImageConfig, imageConfig(p, m, layers))
	if err != nil {
		return platformImage{}, err
	}
	descs := make([]ocispec.Descriptor, len(layers))
	for i, l := range layers {
		descs[i] = l.Desc
	}
	manifest, err := jsonBlob(ocispec.MediaTypeImageManifest, ocispec.Manifest{
		Versioned:   specs.Versioned{SchemaVersion: 2},
		MediaType:   ocispec.MediaTypeImageManifest,
		Config:      config.Desc,
		Layers:      descs,
		Annotations: m.annotations(),
	})
	if err != nil {
		return platformImage{}, err
	}
	return platformImage{Platform: p, Manifest: manifest, Config: config, Layers: layers}, nil
}

// assembleIndex writes the image index naming each platform's manifest,
// in the order the platforms were given.
func assembleIndex(m metadata, images []platformImage) (blob, error) {
	if len(images) == 0 {
		return blob{}, fmt.Errorf("no platform to build")
	}
	manifests := make([]ocispec.Descriptor, len(images))
	for i, img := range images {
		d := img.Manifest.Desc
		d.Platform = &ocispec.Platform{OS: img.Platform.OS, Architecture: img.Platform.Arch, Variant: img.Platform.Variant}
		manifests[i] = d
	}
	return jsonBlob(ocispec.MediaTypeImageIndex, ocispec.Index{
		Versioned:   specs.Versioned{SchemaVersion: 2},
		MediaType:   ocispec.MediaTypeImageIndex,
		Manifests:   manifests,
		Annotations: m.annotations(),
	})
}
