// Package pkghash computes the hashes OpenTofu records for provider
// packages: h1 (Go's dirhash over the unpacked files) and zh (the zip's
// sha256, which is also its OCI layer digest).
package pkghash

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/oci"
	"golang.org/x/mod/sumdb/dirhash"
)

// MaxUnpackedSize bounds how much a package may unpack to (zip bombs).
const MaxUnpackedSize = oci.MaxUnpackedSize

// ZipH1 is ZipH1Context without a context.
func ZipH1(zr *zip.Reader) (string, error) { return ZipH1Context(context.Background(), zr) }

// ZipH1Context computes the h1: hash OpenTofu records for a provider package
// after installing it: Go's dirhash Hash1 over the unpacked files. Unlike
// dirhash.HashZip it leaves directory entries out, as they vanish when the
// zip is unpacked (REFERENCE §3).
//
// Every entry is read as an unpacker reads it: archive/zip checks its
// CRC-32 and that it holds exactly its declared size, so a corrupt entry is
// an error here rather than an h1 over bytes no unpacker would produce.
// Symbolic-link entries count as files holding their target, as OpenTofu's
// unpacker (go-getter) writes them. Reading stops when ctx ends.
func ZipH1Context(ctx context.Context, zr *zip.Reader) (string, error) {
	entries := map[string]*zip.File{}
	var names []string
	var total uint64
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") || f.FileInfo().IsDir() {
			continue
		}
		name, err := CleanZipName(f.Name)
		if err != nil {
			return "", err
		}
		if _, dup := entries[name]; dup {
			return "", fmt.Errorf("zip holds %s twice", name)
		}
		total += f.UncompressedSize64
		if total > MaxUnpackedSize {
			return "", fmt.Errorf("zip unpacks to more than %d bytes", uint64(MaxUnpackedSize))
		}
		entries[name] = f
		names = append(names, name)
	}
	sort.Strings(names)
	return dirhash.Hash1(names, func(name string) (io.ReadCloser, error) {
		f := entries[name]
		r, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return entryReader{Reader: localfile.Reader(ctx, r), Closer: r, name: name}, nil
	})
}

// ZipFileH1 is ZipH1 for a zip file on disk.
func ZipFileH1(file string) (string, error) {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return "", fmt.Errorf("%s is not a readable zip: %w", file, err)
	}
	defer zr.Close()
	h, err := ZipH1(&zr.Reader)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	return h, nil
}

// CleanZipName checks that a zip entry stays inside the directory it is
// unpacked to and returns it in slash form.
func CleanZipName(name string) (string, error) {
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

// SHA256 hashes r, returning lower-case hex and the byte count.
func SHA256(r io.Reader) (string, int64, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	return hex.EncodeToString(h.Sum(nil)), n, err
}

// entryReader names the entry in read errors (a bad CRC, say).
type entryReader struct {
	io.Reader
	io.Closer
	name string
}

func (e entryReader) Read(p []byte) (int, error) {
	n, err := e.Reader.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("zip entry %s: %w", e.name, err)
	}
	return n, err
}
