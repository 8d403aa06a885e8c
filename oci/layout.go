package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"
)

// layout is an OCI image layout directory opened for writing, whose
// index.json names only the tagged roots, one entry per tag with its
// org.opencontainers.image.ref.name, as crane, skopeo and regctl write
// layouts. (oras-go's store also lists every manifest it was given, the
// child manifests of an index among them; `crane push DIR` then refuses
// the layout, and tools that copy a layout's every entry copy the children
// as images of their own.) Everything else is oras-go's store; reading by
// digest does not need index.json (the blobs directory is enough).
type layout struct {
	*oci.Store
	root string
	mu   sync.Mutex // index.json writes
}

func openLayout(root string) (*layout, error) {
	store, err := oci.New(root)
	if err != nil {
		return nil, fmt.Errorf("opening OCI layout %s: %w", root, err)
	}
	store.AutoSaveIndex = false
	return &layout{Store: store, root: root}, nil
}

// Tag tags desc with reference and writes index.json.
func (l *layout) Tag(ctx context.Context, desc ocispec.Descriptor, reference string) error {
	if err := l.Store.Tag(ctx, desc, reference); err != nil {
		return err
	}
	return l.writeIndex(ctx)
}

// writeIndex writes index.json naming every tag's manifest, sorted by
// tag, atomically (a reader never sees half a file).
func (l *layout) writeIndex(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	index := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}
	var tags []string
	if err := l.Store.Tags(ctx, "", func(t []string) error { tags = append(tags, t...); return nil }); err != nil {
		return err
	}
	sort.Strings(tags)
	for _, tag := range tags {
		desc, err := l.Store.Resolve(ctx, tag)
		if err != nil {
			return fmt.Errorf("resolving tag %s in %s: %w", tag, l.root, err)
		}
		annotations := maps.Clone(desc.Annotations)
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[ocispec.AnnotationRefName] = tag
		desc.Annotations = annotations
		index.Manifests = append(index.Manifests, desc)
	}
	b, err := json.Marshal(index)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(l.root, ocispec.ImageIndexFile), b)
}

// writeFileAtomic replaces path with data: a temporary file beside it,
// renamed over it.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".index-*.json")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
