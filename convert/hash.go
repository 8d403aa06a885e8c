package convert

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"golang.org/x/mod/sumdb/dirhash"
)

// MaxUnpackedSize bounds how much a package may unpack to (zip bombs).
const MaxUnpackedSize = 8 << 30

// HashZipH1 computes the h1: hash OpenTofu records for a provider package
// after installing it: Go's dirhash Hash1 over the unpacked files. Unlike
// dirhash.HashZip it leaves directory entries out, as they vanish when the
// zip is unpacked (REFERENCE §3).
func HashZipH1(zr *zip.Reader) (string, error) {
	files := map[string]*zip.File{}
	var names []string
	var total uint64
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") || f.FileInfo().IsDir() {
			continue
		}
		name, err := cleanZipName(f.Name)
		if err != nil {
			return "", err
		}
		if _, dup := files[name]; dup {
			return "", fmt.Errorf("zip holds %s twice", name)
		}
		total += f.UncompressedSize64
		if total > MaxUnpackedSize {
			return "", fmt.Errorf("zip unpacks to more than %d bytes", uint64(MaxUnpackedSize))
		}
		files[name] = f
		names = append(names, name)
	}
	sort.Strings(names)
	return dirhash.Hash1(names, func(name string) (io.ReadCloser, error) {
		f := files[name]
		r, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return struct {
			io.Reader
			io.Closer
		}{io.LimitReader(r, int64(f.UncompressedSize64)), r}, nil
	})
}

// HashZipFileH1 is HashZipH1 for a zip file on disk.
func HashZipFileH1(file string) (string, error) {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return "", fmt.Errorf("%s is not a readable zip: %w", file, err)
	}
	defer zr.Close()
	h, err := HashZipH1(&zr.Reader)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	return h, nil
}

// cleanZipName checks that a zip entry stays inside the directory it is
// unpacked to and returns it in slash form.
func cleanZipName(name string) (string, error) {
	n := strings.ReplaceAll(name, "\\", "/")
	c := path.Clean(n)
	if path.IsAbs(n) || c == ".." || strings.HasPrefix(c, "../") || c == "." || strings.Contains(n, "\x00") {
		return "", fmt.Errorf("zip entry %q would be unpacked outside its directory", name)
	}
	return c, nil
}

// ZH is the zh: hash of a package: its zip's sha256, which is also its OCI
// layer digest.
func ZH(sha256Hex string) string { return "zh:" + sha256Hex }

// SHA256File hashes r, returning lower-case hex and the byte count.
func SHA256File(r io.Reader) (string, int64, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	return hex.EncodeToString(h.Sum(nil)), n, err
}
