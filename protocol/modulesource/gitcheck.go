package modulesource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// checkedStorage is the object store of one clone try: go-git's
// filesystem store, whose pack writer is a packChecker. Objects over
// 1 MiB are read from the pack as streams, not held in the cache; pack
// files stay open until Close (the tree check asks for many sizes).
type checkedStorage struct {
	*filesystem.Storage
	ctx  context.Context
	dir  string
	disk *diskAccount
	stop *stopCause
	mu   sync.Mutex
	pack []*packChecker
}

func newCheckedStorage(ctx context.Context, dir string, disk *diskAccount, stop *stopCause) *checkedStorage {
	st := filesystem.NewStorageWithOptions(osfs.New(dir, osfs.WithBoundOS()), cache.NewObjectLRU(16*cache.MiByte),
		filesystem.Options{LargeObjectThreshold: 1 << 20, KeepDescriptors: true})
	return &checkedStorage{Storage: st, ctx: ctx, dir: dir, disk: disk, stop: stop}
}

// PackfileWriter is go-git's pack writer behind a packChecker.
func (s *checkedStorage) PackfileWriter() (io.WriteCloser, error) {
	w, err := s.Storage.PackfileWriter()
	if err != nil {
		return nil, err
	}
	p := newPackChecker(s.ctx, w, s.disk, s.stop)
	s.mu.Lock()
	s.pack = append(s.pack, p)
	s.mu.Unlock()
	return p, nil
}

// charged is the disk the store's packs and indexes were charged.
func (s *checkedStorage) charged() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, p := range s.pack {
		n += p.charged
	}
	return n
}

// Bounds of the tree check besides the work tree's (variables so that
// tests can lower them).
var (
	// gitMaxTree bounds a tree object (one directory), which is held
	// decoded while the check walks it: 8 MiB is some 100,000 entries.
	gitMaxTree int64 = 8 << 20
	// gitMaxDepth bounds how deep directories nest (go-git's own bound).
	gitMaxDepth = 1024
	// gitMaxLink bounds the target of a symbolic link (PATH_MAX on
	// Linux): go-git reads a link's blob whole into memory to check it
	// out.
	gitMaxLink int64 = 4096
)

// checkTree walks the tree of commit h in the object store before
// anything is checked out, as the checkout would meet it: a subtree held
// many times is walked as many times (each distinct tree is decoded once,
// each blob's size read once). It stops when the fetch's context ends.
// See treeTally for what it refuses.
func (c *gitClone) checkTree(repo *git.Repository, h plumbing.Hash) error {
	commit, err := repo.CommitObject(h)
	if err != nil {
		return fmt.Errorf("commit %s: %w", h, err)
	}
	w := &treeWalk{ctx: c.ctx, store: repo.Storer, trees: map[plumbing.Hash]*object.Tree{}, sizes: map[plumbing.Hash]int64{}}
	w.tally.sizeOf = w.size
	err = w.walk(commit.TreeHash, "", 0)
	if cerr := c.ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		return c.stop.set(err)
	}
	return err
}

type treeWalk struct {
	ctx   context.Context
	store storer.EncodedObjectStorer
	trees map[plumbing.Hash]*object.Tree
	sizes map[plumbing.Hash]int64
	tally treeTally
}

// walk walks the tree h, the directory dir ("" for the root).
func (w *treeWalk) walk(h plumbing.Hash, dir string, depth int) error {
	if depth > gitMaxDepth {
		return refusedf("%s: directories nest more than %d deep", dir, gitMaxDepth)
	}
	t, err := w.tree(h, dir)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		name := e.Name
		if dir != "" {
			name = dir + "/" + e.Name
		}
		if err := w.tally.add(name, e); err != nil {
			return err
		}
		if e.Mode == filemode.Dir {
			if err := w.walk(e.Hash, name, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// tree is the tree object h, decoded once, refused over gitMaxTree.
func (w *treeWalk) tree(h plumbing.Hash, dir string) (*object.Tree, error) {
	if t, ok := w.trees[h]; ok {
		return t, nil
	}
	size, err := w.store.EncodedObjectSize(h)
	if err != nil {
		return nil, fmt.Errorf("directory %q: %w", dir, err)
	}
	if size > gitMaxTree {
		return nil, refusedf("directory %q is a tree object of %d bytes, more than the %d a module fetch takes", dir, size, gitMaxTree)
	}
	t, err := object.GetTree(w.store, h)
	if err != nil {
		return nil, fmt.Errorf("directory %q: %w", dir, err)
	}
	w.trees[h] = t
	return t, nil
}

// size is the size of blob h, by its object header, read once.
func (w *treeWalk) size(h plumbing.Hash) (int64, error) {
	if n, ok := w.sizes[h]; ok {
		return n, nil
	}
	n, err := w.store.EncodedObjectSize(h)
	if err == nil {
		w.sizes[h] = n
	}
	return n, err
}

// treeTally counts a tree's entries as they are walked and refuses, by
// the sizes object headers give (nothing is inflated): more than twice
// gitMaxFiles entries, more than gitMaxFiles files and links, blobs adding
// up to more than gitMaxBytes, a link whose target is longer than
// gitMaxLink, submodules.
type treeTally struct {
	sizeOf  func(plumbing.Hash) (int64, error)
	entries int
	files   int
	bytes   int64
}

func (t *treeTally) add(name string, e object.TreeEntry) error {
	if t.entries++; t.entries > 2*gitMaxFiles {
		return refusedf("the tree has more than %d entries (a subtree counted each time it appears)", 2*gitMaxFiles)
	}
	switch e.Mode {
	case filemode.Dir:
		return nil
	case filemode.Submodule:
		return refusedf("%s is a submodule, which pull-through does not fetch", name)
	case filemode.Regular, filemode.Executable, filemode.Deprecated, filemode.Symlink:
	default:
		return refusedf("%s has the mode %s, not a file, link or directory", name, e.Mode)
	}
	if t.files++; t.files > gitMaxFiles {
		return refusedf("the tree has more than %d files", gitMaxFiles)
	}
	size, err := t.sizeOf(e.Hash)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if e.Mode == filemode.Symlink && size > gitMaxLink {
		return refusedf("%s is a symbolic link whose target is %d bytes long, more than %d", name, size, gitMaxLink)
	}
	if t.bytes += size; t.bytes > gitMaxBytes {
		return refusedf("the tree holds more than %d bytes", gitMaxBytes)
	}
	return nil
}
