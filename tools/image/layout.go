package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// writeLayout (re)writes dir as an OCI image layout holding the image and
// nothing else: every blob under blobs/sha256, and an index.json naming
// only the tagged index (its platform manifests are reached through it,
// as crane, regctl and skopeo expect). The layout is written beside dir
// and renamed into place, so dir is never half-written; an existing dir
// is replaced only when it is an OCI layout itself.
func writeLayout(dir, tag string, index blob, images []platformImage) error {
	if err := checkReplaceable(dir); err != nil {
		return err
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := populateLayout(tmp, tag, index, images); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// checkReplaceable refuses to replace a directory that is not an OCI
// layout (a mistyped --out must not delete anything else).
func checkReplaceable(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, ocispec.ImageLayoutFile)); err != nil {
		return fmt.Errorf("%s exists and is not an OCI image layout: not replacing it", dir)
	}
	return nil
}

// populateLayout writes the layout's files into a new directory.
func populateLayout(dir, tag string, index blob, images []platformImage) error {
	if err := os.MkdirAll(filepath.Join(dir, ocispec.ImageBlobsDir, "sha256"), 0o755); err != nil {
		return err
	}
	for _, b := range layoutBlobs(index, images) {
		if err := writeBlob(dir, b); err != nil {
			return err
		}
	}
	layoutFile, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ocispec.ImageLayoutFile), layoutFile, 0o644); err != nil {
		return err
	}
	root := index.Desc
	root.Annotations = map[string]string{ocispec.AnnotationRefName: tag}
	indexJSON, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{root},
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ocispec.ImageIndexFile), indexJSON, 0o644)
}

// layoutBlobs lists every blob of the image once (the base layer is
// shared by all platforms).
func layoutBlobs(index blob, images []platformImage) []blob {
	blobs := []blob{index}
	for _, img := range images {
		blobs = append(blobs, img.Manifest, img.Config)
		for _, l := range img.Layers {
			blobs = append(blobs, blob{Desc: l.Desc, Data: l.Blob})
		}
	}
	seen := map[string]bool{}
	unique := blobs[:0]
	for _, b := range blobs {
		if !seen[b.Desc.Digest.String()] {
			seen[b.Desc.Digest.String()] = true
			unique = append(unique, b)
		}
	}
	return unique
}

// writeBlob writes one blob under blobs/<algorithm>/<hex>.
func writeBlob(dir string, b blob) error {
	p := filepath.Join(dir, ocispec.ImageBlobsDir, b.Desc.Digest.Algorithm().String(), b.Desc.Digest.Encoded())
	return os.WriteFile(p, b.Data, 0o644)
}
