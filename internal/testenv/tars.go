package testenv

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// TarEntry is one entry of a tar.gz made by CraftTarGz: a file (Data), a
// directory (Dir), a symbolic link (Link) or a hard link (HardLink); with
// DeclaredSize the header claims that size and the archive ends after
// the header, as a sparse or truncated hostile archive would.
type TarEntry struct {
	Name         string
	Data         []byte
	Mode         int64
	Dir          bool
	Link         string
	HardLink     string
	DeclaredSize int64
}

// CraftTarGz writes a gzip-compressed tar of the entries exactly as
// described.
func CraftTarGz(t testing.TB, entries ...TarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: e.Mode, Size: int64(len(e.Data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		switch {
		case e.Dir:
			h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
		case e.Link != "":
			h.Typeflag, h.Size, h.Linkname = tar.TypeSymlink, 0, e.Link
		case e.HardLink != "":
			h.Typeflag, h.Size, h.Linkname = tar.TypeLink, 0, e.HardLink
		case e.DeclaredSize > 0:
			h.Size = e.DeclaredSize
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.DeclaredSize > 0 {
			tw.Flush() // the header only: the archive ends here
			zw.Close()
			return buf.Bytes()
		}
		if _, err := tw.Write(e.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TarGzDir is a tar.gz of a directory's files (modes kept, links as
// links), with every name under prefix ("" for none).
func TarGzDir(t testing.TB, dir, prefix string) []byte {
	t.Helper()
	var entries []TarEntry
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := filepath.ToSlash(filepath.Join(prefix, rel))
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			entries = append(entries, TarEntry{Name: name, Link: target})
			return err
		case fi.IsDir():
			entries = append(entries, TarEntry{Name: name + "/", Dir: true})
		default:
			b, err := os.ReadFile(p)
			entries = append(entries, TarEntry{Name: name, Data: b, Mode: int64(fi.Mode().Perm())})
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return CraftTarGz(t, entries...)
}
