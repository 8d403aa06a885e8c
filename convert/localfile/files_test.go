package localfile_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
)

func TestReadBoundedRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.zip")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.zip")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "named pipe", zero: "device", dir: "directory"} {
		done := make(chan error, 1)
		go func() { _, err := localfile.ReadBounded(path, 1<<20); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: want an error naming the path and %q, got %v", path, want, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: reading blocked", path)
		}
	}
}

func TestReadBoundedLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("12345"), 0o644)
	if _, err := localfile.ReadBounded(p, 4); err == nil {
		t.Error("a file over the limit was read")
	}
	if b, err := localfile.ReadBounded(p, 5); err != nil || string(b) != "12345" {
		t.Errorf("got %q %v", b, err)
	}
}

func TestReaderStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := localfile.Reader(ctx, strings.NewReader("abc"))
	cancel()
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v", err)
	}
}

func TestWriteAtomic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("old"), 0o644)
	err := localfile.Replace(p, func(w io.Writer) error { w.Write([]byte("partial")); return errors.New("boom") })
	if err == nil {
		t.Fatal("error lost")
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("a failed write replaced the file: %q", b)
	}
	if err := localfile.WriteAtomic(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("got %q", b)
	}
}
