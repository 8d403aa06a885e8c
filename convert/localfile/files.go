// Package localfile is oci-tofu's local file I/O: bounded reads of regular
// files that stop when their context ends, and writes that replace a file
// only once its new content is complete. Release directories, keys, lock
// files and configuration all come in through it, so a FIFO, a device or a
// link to /dev/zero is refused with its path named instead of hanging a
// push.
package localfile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// OpenRegular opens path for reading if it is a regular file (after
// following symbolic links); anything else is refused without being
// opened for reading, so opening a FIFO cannot block.
func OpenRegular(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlocking, 0)
	if err != nil {
		return nil, err
	}
	// The file may have been swapped between Stat and Open.
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = notRegular(path, fi.Mode())
		}
		return nil, err
	}
	return f, nil
}

func notRegular(path string, mode fs.FileMode) error {
	kind := "not a regular file"
	switch {
	case mode.IsDir():
		kind = "a directory"
	case mode&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	case mode&fs.ModeDevice != 0:
		kind = "a device"
	}
	return fmt.Errorf("%s is %s, not a regular file", path, kind)
}

// ReadBounded reads a regular file of at most max bytes.
func ReadBounded(path string, max int64) ([]byte, error) {
	return ReadBoundedContext(context.Background(), path, max)
}

// ReadBoundedContext is ReadBounded that stops when ctx ends.
func ReadBoundedContext(ctx context.Context, path string, max int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	n, err := b.ReadFrom(io.LimitReader(Reader(ctx, f), max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if n > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return b.Bytes(), nil
}

// Reader wraps r so that reads fail with ctx's error once ctx ends: a long
// hash or copy then stops within one buffer of a cancellation.
func Reader(ctx context.Context, r io.Reader) io.Reader {
	if ctx.Done() == nil {
		return r
	}
	return &ctxReader{ctx: ctx, r: r}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// WriteAtomic replaces path only once the new content is complete.
func WriteAtomic(path string, data []byte) error {
	return Replace(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// Replace writes a temporary file beside path with write, and renames it
// over path only when write succeeded: readers never see a partial file.
func Replace(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".oci-tofu-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
