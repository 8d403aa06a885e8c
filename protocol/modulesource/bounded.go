package modulesource

import (
	"context"
	"os"
	"sync"

	"github.com/go-git/go-billy/v5"
)

// Work tree limits of a git fetch (variables so tests can lower them).
var (
	gitMaxFiles = MaxFiles
	gitMaxBytes = int64(MaxTreeSize)
)

// boundedFS is a git work tree that refuses more than gitMaxFiles files
// and links and more than gitMaxBytes bytes written in all, as it is
// written (checkTree refused larger trees before, from the sizes the
// object store gives; this holds whatever go-git writes). It charges what
// is written to the fetch's disk account and stops when the fetch's
// context ends, recording why in stop.
type boundedFS struct {
	billy.Filesystem
	ctx   context.Context
	disk  *diskAccount
	stop  *stopCause
	mu    sync.Mutex
	files int
	bytes int64
}

func (b *boundedFS) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.files, b.bytes = 0, 0
	b.stop.reset()
}

func (b *boundedFS) addFile() error {
	if err := b.ctx.Err(); err != nil {
		return b.stop.set(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.files++; b.files > gitMaxFiles {
		return b.stop.set(refusedf("the tree has more than %d files", gitMaxFiles))
	}
	return nil
}

func (b *boundedFS) addBytes(n int) error {
	if err := b.ctx.Err(); err != nil {
		return b.stop.set(err)
	}
	if err := b.count(n); err != nil {
		return err
	}
	if err := b.disk.charge(int64(n)); err != nil {
		return b.stop.set(err)
	}
	return nil
}

func (b *boundedFS) count(n int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bytes += int64(n); b.bytes > gitMaxBytes {
		return b.stop.set(refusedf("the tree holds more than %d bytes", gitMaxBytes))
	}
	return nil
}

func (b *boundedFS) Create(name string) (billy.File, error) {
	return b.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (b *boundedFS) OpenFile(name string, flag int, perm os.FileMode) (billy.File, error) {
	if flag&os.O_CREATE != 0 {
		if err := b.addFile(); err != nil {
			return nil, err
		}
	}
	f, err := b.Filesystem.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &boundedFile{File: f, fs: b}, nil
}

func (b *boundedFS) Symlink(target, link string) error {
	if err := b.addFile(); err != nil {
		return err
	}
	return b.Filesystem.Symlink(target, link)
}

type boundedFile struct {
	billy.File
	fs *boundedFS
}

func (f *boundedFile) Write(p []byte) (int, error) {
	if err := f.fs.addBytes(len(p)); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}
