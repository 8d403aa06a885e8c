package pullthrough

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// File is one file of an origin release on its way to disk: a
// single download from the origin, written to a temporary file and hashed
// as it arrives, which any number of readers follow (clients being served
// the file, the upload to the registry) while it grows. Readers never see
// the whole file before it has verified: the last chunk written is held
// back until the download has ended with the expected size and sha256, so
// a mismatch leaves every reader with an error instead of the file.
type File struct {
	name string
	path string
	want string // expected sha256 (hex); "" for files nothing lists
	max  int64
	// counted, when set, is told how many bytes came from the origin.
	counted func(float64)

	// mu guards what follows; changed is closed (and replaced) whenever
	// it changes, so waiters can watch a context as well.
	mu       sync.Mutex
	changed  chan struct{}
	answered bool  // the origin answered (size known, if it said)
	size     int64 // announced size, -1 when the origin sent none
	visible  int64 // bytes readers may read
	done     bool
	err      error
}

// Digest is the digest the file must have ("sha256:…"), empty for a
// file nothing lists.
func (f *File) Digest() string {
	if f.want == "" {
		return ""
	}
	return "sha256:" + f.want
}

func newFile(name, path, want string, max int64) (*File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	f.Close()
	return &File{name: name, path: path, want: want, max: max, size: -1, changed: make(chan struct{})}, nil
}

func (g *File) lock()   { g.mu.Lock() }
func (g *File) unlock() { g.mu.Unlock() }

// broadcastLocked wakes every waiter.
func (g *File) broadcastLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// ErrDigestMismatch marks a download whose bytes are not the ones the
// signed SHA256SUMS lists (or whose size is not the announced one).
var ErrDigestMismatch = errors.New("the origin's file does not match the signed SHA256SUMS")

// fill downloads the file: open starts the origin's answer, answered is
// called once its size is known (-1: not announced). It returns the
// download's outcome, which every reader also sees.
func (g *File) fill(ctx context.Context, open func(context.Context) (*origin.Body, error), answered func(size int64)) (err error) {
	defer func() { g.finish(err) }()
	body, err := open(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	g.lock()
	g.answered, g.size = true, body.Size
	g.broadcastLocked()
	g.unlock()
	if answered != nil {
		answered(body.Size)
	}
	f, err := os.OpenFile(g.path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	written, err := g.copy(ctx, f, h, body)
	if err != nil {
		return err
	}
	if body.Size >= 0 && written != body.Size {
		return fmt.Errorf("%w: %s: the origin sent %d bytes, it announced %d", ErrDigestMismatch, g.name, written, body.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); g.want != "" && got != g.want {
		return fmt.Errorf("%w (%w): %s: sha256 %s, SHA256SUMS lists %s", ErrDigestMismatch, ingest.ErrVerification, g.name, got, g.want)
	}
	return f.Close()
}

// copy writes the body to f and the hash, publishing all but the latest
// chunk to readers as it goes.
func (g *File) copy(ctx context.Context, f *os.File, h io.Writer, body io.Reader) (int64, error) {
	buf := make([]byte, 128<<10)
	var written int64
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if written+int64(n) > g.max || (g.size >= 0 && written+int64(n) > g.size) {
				return written, fmt.Errorf("%w: %s: the origin sent more bytes than announced (or than %d)", ErrDigestMismatch, g.name, g.max)
			}
			if _, err := f.Write(buf[:n]); err != nil {
				return written, err
			}
			h.Write(buf[:n])
			if g.counted != nil {
				g.counted(float64(n))
			}
			g.lock()
			g.visible = written // the chunk just written stays held back
			g.broadcastLocked()
			g.unlock()
			written += int64(n)
		}
		switch {
		case rerr == io.EOF:
			return written, nil
		case rerr != nil:
			return written, fmt.Errorf("downloading %s from the origin: %w", g.name, rerr)
		case ctx.Err() != nil:
			return written, ctx.Err()
		}
	}
}

// finish records the outcome: on success every byte becomes visible.
func (g *File) finish(err error) {
	g.lock()
	defer g.unlock()
	if g.done {
		return
	}
	g.done, g.err = true, err
	if err == nil {
		if st, serr := os.Stat(g.path); serr == nil {
			g.visible = st.Size()
		}
	}
	g.broadcastLocked()
}

// outcome waits until the download has ended and returns its error.
func (g *File) outcome(ctx context.Context) error {
	for {
		g.lock()
		done, err, ch := g.done, g.err, g.changed
		g.unlock()
		if done {
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Answer waits until the origin has answered, and returns the announced
// size (-1: none), or the download's error if it failed before.
func (g *File) Answer(ctx context.Context) (int64, error) {
	for {
		g.lock()
		answered, size, done, err, ch := g.answered, g.size, g.done, g.err, g.changed
		g.unlock()
		switch {
		case done && err != nil:
			return 0, err
		case answered:
			return size, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Reader follows the file from its start. The caller closes it.
func (g *File) Reader(ctx context.Context) (io.ReadCloser, error) {
	f, err := os.Open(g.path)
	if err != nil {
		return nil, err
	}
	return &follower{g: g, f: f, ctx: ctx}, nil
}

// follower reads a File as it grows.
type follower struct {
	g   *File
	f   *os.File
	off int64
	ctx context.Context
}

func (r *follower) Read(p []byte) (int, error) {
	for {
		r.g.lock()
		visible, done, err, ch := r.g.visible, r.g.done, r.g.err, r.g.changed
		r.g.unlock()
		if done && err != nil {
			return 0, err
		}
		if r.off < visible {
			n := int(min(int64(len(p)), visible-r.off))
			n, rerr := r.f.ReadAt(p[:n], r.off)
			r.off += int64(n)
			if n > 0 {
				return n, nil
			}
			return 0, rerr
		}
		if done {
			return 0, io.EOF
		}
		select {
		case <-ch:
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		}
	}
}

func (r *follower) Close() error { return r.f.Close() }

// Name is the file's name in its release.
func (g *File) Name() string { return g.name }
