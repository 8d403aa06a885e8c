package pullthrough

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// pipeBody is an origin answer the test writes chunk by chunk.
func pipeBody(size int64) (*io.PipeWriter, func(context.Context) (*origin.Body, error)) {
	pr, pw := io.Pipe()
	return pw, func(context.Context) (*origin.Body, error) { return &origin.Body{ReadCloser: pr, Size: size}, nil }
}

// Readers follow a growing file but never get its last chunk before the
// whole file has verified; a mismatch reaches every reader as an error.
func TestGrowingFileHoldsBackUntilVerified(t *testing.T) {
	content := []byte("first chunk|second chunk")
	for _, c := range []struct {
		name, want string
		size       int64
		ok         bool
	}{
		{"verified", sha256Hex(content), int64(len(content)), true},
		{"size unknown", sha256Hex(content), -1, true},
		{"digest mismatch", sha256Hex([]byte("other")), int64(len(content)), false},
		{"short", sha256Hex(content), int64(len(content)) + 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := newFile("f.zip", filepath.Join(t.TempDir(), "f.zip"), c.want, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			pw, open := pipeBody(c.size)
			done := make(chan error, 1)
			go func() { done <- g.fill(context.Background(), open, nil) }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if size, err := g.Answer(ctx); err != nil || size != c.size {
				t.Fatalf("answer: %d, %v", size, err)
			}
			rd, err := g.Reader(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer rd.Close()
			pw.Write(content[:12])
			pw.Write(content[12:])
			// The first chunk is readable, the second held back.
			buf := make([]byte, 100)
			n, err := rd.Read(buf)
			if err != nil || string(buf[:n]) != "first chunk|" {
				t.Fatalf("first read: %q, %v", buf[:n], err)
			}
			short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
			rd.(*follower).ctx = short
			if n, err := rd.Read(buf); n != 0 || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the last chunk was readable before the file verified: %q, %v", buf[:n], err)
			}
			cancelShort()
			rd.(*follower).ctx = ctx
			pw.Close()
			rest, err := io.ReadAll(rd)
			ferr := <-done
			if c.ok {
				if err != nil || ferr != nil || string(rest) != "second chunk" {
					t.Fatalf("after verification: %q, %v, %v", rest, err, ferr)
				}
				return
			}
			if err == nil || ferr == nil || !errors.Is(err, ErrDigestMismatch) || len(rest) != 0 {
				t.Fatalf("a bad file reached the reader: %q, %v, %v", rest, err, ferr)
			}
		})
	}
}
