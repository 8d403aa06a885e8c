package testenv

import (
	"archive/zip"
	"bytes"
	"hash/crc32"
	"io/fs"
	"testing"
)

// ZipEntry is one entry of a zip made by CraftZip: what careful tools
// write, or, with the fields below, what careless or hostile ones do.
type ZipEntry struct {
	Name string
	Data []byte
	// Mode is the entry's mode (default 0644; fs.ModeDir for a directory,
	// fs.ModeSymlink with the target as Data for a link).
	Mode fs.FileMode
	// BadCRC records a CRC-32 that does not match Data.
	BadCRC bool
	// DeclaredSize, when not nil, is the uncompressed size the headers
	// claim instead of len(Data).
	DeclaredSize *uint64
}

// CraftZip writes a zip of stored (uncompressed) entries exactly as
// described, corruptions included, for tests of what readers accept.
func CraftZip(t testing.TB, entries ...ZipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		fh := &zip.FileHeader{Name: e.Name, Method: zip.Store}
		mode := e.Mode
		if mode == 0 {
			mode = 0o644
		}
		fh.SetMode(mode)
		fh.CRC32 = crc32.ChecksumIEEE(e.Data)
		if e.BadCRC {
			fh.CRC32 ^= 0xdeadbeef
		}
		fh.CompressedSize64 = uint64(len(e.Data))
		fh.UncompressedSize64 = uint64(len(e.Data))
		if e.DeclaredSize != nil {
			fh.UncompressedSize64 = *e.DeclaredSize
		}
		w, err := zw.CreateRaw(fh)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Size is a pointer to n, for ZipEntry.DeclaredSize.
func Size(n uint64) *uint64 { return &n }
