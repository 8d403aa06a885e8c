package oci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"
)

// layout is an OCI image layout directory, shared by every reader and
// writer of it in this process (see openLayout), whose index.json names
// the tagged roots, one entry per tag with its
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
	root  string
	store atomic.Pointer[oci.Store]

	mu       sync.Mutex // index.json writes, reloads, referrers
	indexSum [sha256.Size]byte
	// referrers are the referrers index.json lists, by digest.
	referrers map[digest.Digest]ocispec.Descriptor
}

// layouts are the OCI layouts this process has opened, by absolute path:
// two stores of one layout would each write index.json from their own
// tags, and the later write would drop the other's tags.
var layouts = struct {
	sync.Mutex
	m map[string]*layout
}{m: map[string]*layout{}}

// IsLayout reports whether repo is an OCI layout directory (oci-tofu's
// own, or oras-go's oci.Store), not a registry's repository.
func IsLayout(repo any) bool {
	switch repo.(type) {
	case *layout, *oci.Store:
		return true
	}
	return false
}

// openLayout opens the OCI layout at root, shared with every other opener
// in this process, and picks up what another process wrote to its
// index.json since this process last read or wrote it. With create, a
// missing layout is created, its files written whole (a reader never sees
// one half-written); without, a directory that is not (yet) a whole
// layout is errdef.ErrNotFound: what is being created is not held yet.
func openLayout(root string, create bool) (*layout, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("opening OCI layout %s: %w", root, err)
	}
	if create {
		err = createLayoutFiles(abs)
	} else {
		err = wholeLayout(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("opening OCI layout %s: %w", root, err)
	}
	l := sharedLayout(abs)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.reloadIfChanged(); err != nil {
		return nil, fmt.Errorf("opening OCI layout %s: %w", root, err)
	}
	return l, nil
}

func sharedLayout(abs string) *layout {
	layouts.Lock()
	defer layouts.Unlock()
	l, ok := layouts.m[abs]
	if !ok {
		l = &layout{root: abs}
		layouts.m[abs] = l
	}
	return l
}

// wholeLayout: a layout is whole once both oci-layout and index.json
// exist; anything less is errdef.ErrNotFound.
func wholeLayout(abs string) error {
	for _, name := range []string{"", ocispec.ImageLayoutFile, ocispec.ImageIndexFile} {
		if _, err := os.Stat(filepath.Join(abs, name)); errors.Is(err, fs.ErrNotExist) {
			if name == "" {
				return errdef.ErrNotFound
			}
			return fmt.Errorf("not (yet) an OCI layout: no %s: %w", name, errdef.ErrNotFound)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// createLayoutFiles makes abs a layout unless it is one: the blobs
// directory, then an empty index.json, then oci-layout (the file readers
// take as "whole"), each written under a temporary name and linked into
// place only if nothing is there yet, so concurrent creators agree.
func createLayoutFiles(abs string) error {
	if err := os.MkdirAll(filepath.Join(abs, ocispec.ImageBlobsDir), 0o755); err != nil {
		return err
	}
	empty, err := json.Marshal(emptyIndex())
	if err != nil {
		return err
	}
	if err := createFileOnce(filepath.Join(abs, ocispec.ImageIndexFile), empty); err != nil {
		return err
	}
	marker, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return err
	}
	return createFileOnce(filepath.Join(abs, ocispec.ImageLayoutFile), marker)
}

// emptyIndex is an index.json naming nothing.
func emptyIndex() ocispec.Index {
	return ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}
}

// createFileOnce writes path whole unless it exists: a temporary file
// beside it, hard-linked to path (which fails if path exists), or renamed
// where the file system has no hard links.
func createFileOnce(path string, data []byte) error {
	if _, err := os.Lstat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		err = os.Rename(tmp, path)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// reloadIfChanged (l.mu held) opens the store afresh when index.json is
// not what this process last read or wrote: on first use, and after
// another process tagged something.
func (l *layout) reloadIfChanged() error {
	b, err := readIndexFile(l.root)
	if err != nil {
		return err
	}
	if l.store.Load() != nil && sha256.Sum256(b) == l.indexSum {
		return nil
	}
	store, err := oci.New(l.root)
	if err != nil {
		return err
	}
	store.AutoSaveIndex = false
	referrers, err := listedReferrers(store, b)
	if err != nil {
		return err
	}
	l.store.Store(store)
	l.referrers = referrers
	l.indexSum = sha256.Sum256(b)
	return nil
}

// listedReferrers finds the referrers among index.json's untagged
// entries (earlier versions listed every manifest there: each is read to
// learn whether it has a subject, at most MaxManifestSize of it).
func listedReferrers(store *oci.Store, indexJSON []byte) (map[digest.Digest]ocispec.Descriptor, error) {
	var index ocispec.Index
	if err := json.Unmarshal(indexJSON, &index); err != nil {
		return nil, fmt.Errorf("reading index.json: %w", err)
	}
	out := map[digest.Digest]ocispec.Descriptor{}
	for _, d := range index.Manifests {
		if d.Annotations[ocispec.AnnotationRefName] != "" || d.MediaType != ocispec.MediaTypeImageManifest || CheckManifestSize(d) != nil {
			continue
		}
		m, err := content.FetchAll(context.Background(), store, d)
		if err != nil {
			continue // listed but missing or corrupt: not ours to list again
		}
		if hasSubject(m) {
			out[d.Digest] = referrerEntry(d, m)
		}
	}
	return out, nil
}

func readIndexFile(root string) ([]byte, error) {
	f, err := os.Open(filepath.Join(root, ocispec.ImageIndexFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(f, MaxManifestSize+1)); err != nil {
		return nil, err
	}
	if buf.Len() > MaxManifestSize {
		return nil, fmt.Errorf("%s is over %d bytes", ocispec.ImageIndexFile, MaxManifestSize)
	}
	return buf.Bytes(), nil
}

// Fetch, Exists, Push, Resolve, Tags and Predecessors are the store's.

func (l *layout) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	return l.store.Load().Fetch(ctx, desc)
}

func (l *layout) Exists(ctx context.Context, desc ocispec.Descriptor) (bool, error) {
	return l.store.Load().Exists(ctx, desc)
}

// Push stores content as oras-go's store does; a manifest with a subject
// (a referrer) is also listed in index.json, at once.
func (l *layout) Push(ctx context.Context, expected ocispec.Descriptor, r io.Reader) error {
	if expected.MediaType != ocispec.MediaTypeImageManifest || CheckManifestSize(expected) != nil {
		return l.store.Load().Push(ctx, expected, r)
	}
	b, err := content.ReadAll(r, expected)
	if err != nil {
		return err
	}
	if err := l.store.Load().Push(ctx, expected, bytes.NewReader(b)); err != nil {
		return err
	}
	if !hasSubject(b) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.reloadIfChanged(); err != nil {
		return err
	}
	l.referrers[expected.Digest] = referrerEntry(expected, b)
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
	return ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size, ArtifactType: ArtifactTypeOf(m)}
}

func (l *layout) Resolve(ctx context.Context, reference string) (ocispec.Descriptor, error) {
	return l.store.Load().Resolve(ctx, reference)
}

func (l *layout) Tags(ctx context.Context, last string, fn func(tags []string) error) error {
	return l.store.Load().Tags(ctx, last, fn)
}

func (l *layout) Predecessors(ctx context.Context, node ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	return l.store.Load().Predecessors(ctx, node)
}

// Tag tags desc with reference and writes index.json, after taking in
// what another process tagged since this one last looked.
func (l *layout) Tag(ctx context.Context, desc ocispec.Descriptor, reference string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.reloadIfChanged(); err != nil {
		return err
	}
	if err := l.store.Load().Tag(ctx, desc, reference); err != nil {
		return err
	}
	return l.writeIndex(ctx)
}

// writeIndex (l.mu held) writes index.json naming every tag's manifest,
// sorted by tag, then every referrer, sorted by digest, atomically (a
// reader never sees half a file).
func (l *layout) writeIndex(ctx context.Context) error {
	store := l.store.Load()
	index := emptyIndex()
	var tags []string
	if err := store.Tags(ctx, "", func(t []string) error { tags = append(tags, t...); return nil }); err != nil {
		return err
	}
	sort.Strings(tags)
	for _, tag := range tags {
		desc, err := store.Resolve(ctx, tag)
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
	if err := writeFileAtomic(filepath.Join(l.root, ocispec.ImageIndexFile), b); err != nil {
		return err
	}
	l.indexSum = sha256.Sum256(b)
	return nil
}

// writeFileAtomic replaces path with data: a temporary file beside it,
// renamed over it.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		if tmp != "" {
			os.Remove(tmp)
		}
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeTemp writes data to a new temporary file beside path (mode 0644)
// and returns its name.
func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// ArtifactTypeOf is a referrer's artifact type as the referrers API gives
// it: its artifactType, else its config's media type (how notation and
// image-spec 1.0 tools mark a manifest's type).
func ArtifactTypeOf(m ocispec.Manifest) string {
	if m.ArtifactType != "" {
		return m.ArtifactType
	}
	return m.Config.MediaType
}
