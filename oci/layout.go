package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/oci"
)

// layout is an OCI image layout directory opened for writing, whose
// index.json names the tagged roots, one entry per tag with its
// org.opencontainers.image.ref.name, as crane, skopeo and regctl write
// layouts, and after them the referrers pushed into it (manifests with a
// subject, untagged), as oras writes them: nothing else reaches a
// referrer, so a reader of the layout (oras-go, `oras cp -r
// --from-oci-layout`, cosign) finds it only there. (oras-go's store also
// lists every manifest it was given, the child manifests of an index
// among them; `crane push DIR` then refuses the layout, and tools that
// copy a layout's every entry copy the children as images of their own.)
// Everything else is oras-go's store; reading by digest does not need
// index.json (the blobs directory is enough).
type layout struct {
	*oci.Store
	root string
	mu   sync.Mutex // index.json writes, referrers
	// referrers are the referrers index.json lists, by digest.
	referrers map[digest.Digest]ocispec.Descriptor
}

func openLayout(root string) (*layout, error) {
	store, err := oci.New(root)
	if err != nil {
		return nil, fmt.Errorf("opening OCI layout %s: %w", root, err)
	}
	store.AutoSaveIndex = false
	l := &layout{Store: store, root: root, referrers: map[digest.Digest]ocispec.Descriptor{}}
	if err := l.loadReferrers(); err != nil {
		return nil, fmt.Errorf("opening OCI layout %s: %w", root, err)
	}
	return l, nil
}

// loadReferrers finds the referrers among index.json's untagged entries
// (earlier versions listed every manifest there: each is read to learn
// whether it has a subject, at most MaxManifestSize of it).
func (l *layout) loadReferrers() error {
	b, err := os.ReadFile(filepath.Join(l.root, ocispec.ImageIndexFile))
	if err != nil {
		return err // oci.New wrote it when it was missing
	}
	var index ocispec.Index
	if err := json.Unmarshal(b, &index); err != nil {
		return fmt.Errorf("reading index.json: %w", err)
	}
	for _, d := range index.Manifests {
		if d.Annotations[ocispec.AnnotationRefName] != "" || d.MediaType != ocispec.MediaTypeImageManifest || checkManifestSize(d) != nil {
			continue
		}
		m, err := content.FetchAll(context.Background(), l.Store, d)
		if err != nil {
			continue // listed but missing or corrupt: not ours to list again
		}
		if hasSubject(m) {
			l.referrers[d.Digest] = referrerEntry(d, m)
		}
	}
	return nil
}

// Push stores content as oras-go's store does; a manifest with a subject
// (a referrer) is also listed in index.json, at once.
func (l *layout) Push(ctx context.Context, expected ocispec.Descriptor, r io.Reader) error {
	if expected.MediaType != ocispec.MediaTypeImageManifest || checkManifestSize(expected) != nil {
		return l.Store.Push(ctx, expected, r)
	}
	b, err := content.ReadAll(r, expected)
	if err != nil {
		return err
	}
	if err := l.Store.Push(ctx, expected, bytes.NewReader(b)); err != nil {
		return err
	}
	if !hasSubject(b) {
		return nil
	}
	l.mu.Lock()
	l.referrers[expected.Digest] = referrerEntry(expected, b)
	l.mu.Unlock()
	return l.writeIndex(ctx)
}

// hasSubject reports whether a manifest names a subject.
func hasSubject(manifest []byte) bool {
	var m struct {
		Subject *ocispec.Descriptor `json:"subject"`
	}
	return json.Unmarshal(manifest, &m) == nil && m.Subject != nil
}

// referrerEntry is index.json's entry for a referrer: its descriptor and
// artifact type, as oras lists them.
func referrerEntry(d ocispec.Descriptor, manifest []byte) ocispec.Descriptor {
	var m ocispec.Manifest
	_ = json.Unmarshal(manifest, &m)
	return ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size, ArtifactType: referrerType(m)}
}

// Tag tags desc with reference and writes index.json.
func (l *layout) Tag(ctx context.Context, desc ocispec.Descriptor, reference string) error {
	if err := l.Store.Tag(ctx, desc, reference); err != nil {
		return err
	}
	return l.writeIndex(ctx)
}

// writeIndex writes index.json naming every tag's manifest, sorted by
// tag, then every referrer, sorted by digest, atomically (a reader never
// sees half a file).
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
	refs := slices.SortedFunc(maps.Values(l.referrers), func(a, b ocispec.Descriptor) int { return strings.Compare(string(a.Digest), string(b.Digest)) })
	index.Manifests = append(index.Manifests, refs...)
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
