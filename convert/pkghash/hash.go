// Package pkghash computes the hashes OpenTofu records for provider
// packages: h1 (Go's dirhash over the unpacked files) and zh (the zip's
// sha256, which is also its OCI layer digest).
package pkghash

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// MaxUnpackedSize bounds how much a package may unpack to (zip bombs).
const MaxUnpackedSize = oci.MaxUnpackedSize

// ZipH1 is ZipH1Context without a context.
func ZipH1(zr *zip.Reader) (string, error) { return ZipH1Context(context.Background(), zr) }

// ZipH1Context computes the h1: hash OpenTofu records for a provider package
// after installing it: Go's dirhash Hash1 over the unpacked files. Unlike
// dirhash.HashZip it leaves directory entries out, as they vanish when the
// zip is unpacked (docs/reference.md §3).
//
// The zip is taken as OpenTofu's unpacker (go-getter's ZipDecompressor)
// takes it, or refused where that unpacker would fail or where the result
// would depend on the machine (UnpackedFiles): every entry is read as an
// unpacker reads it, so archive/zip checks its CRC-32 and that it holds
// exactly its declared size, and a corrupt entry is an error here rather
// than an h1 over bytes no unpacker would produce. Symbolic-link entries
// count as files holding their target, as go-getter writes them. Reading
// stops when ctx ends.
func ZipH1Context(ctx context.Context, zr *zip.Reader) (string, error) {
	h1, _, err := ZipH1Sums(ctx, zr)
	return h1, err
}

// ZipH1Sums is ZipH1Context that also returns the sha256 (hex) of each
// file it hashed, by its entry's name in the zip: dirhash's Hash1 hashes
// every file first (the SBOM of the package takes them, convert/sbom).
func ZipH1Sums(ctx context.Context, zr *zip.Reader) (string, map[string]string, error) {
	files, err := UnpackedFiles(zr)
	if err != nil {
		return "", nil, err
	}
	// dirhash.Hash1, keeping the files' sums: the summary of
	// "<sha256 hex>  <name>\n" lines, sorted by name (UnpackedFiles
	// sorts them), hashed again.
	summary := sha256.New()
	sums := make(map[string]string, len(files))
	for _, f := range files {
		if strings.Contains(f.Name, "\n") {
			return "", nil, errors.New("dirhash: filenames with newlines are not supported")
		}
		r, err := openEntry(ctx, f.Name, f.File)
		if err != nil {
			return "", nil, err
		}
		h := sha256.New()
		_, err = io.Copy(h, r)
		r.Close()
		if err != nil {
			return "", nil, err
		}
		sum := hex.EncodeToString(h.Sum(nil))
		sums[f.File.Name] = sum
		fmt.Fprintf(summary, "%s  %s\n", sum, f.Name)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(summary.Sum(nil)), sums, nil
}

// ZipFileH1Sums is ZipH1Sums for a zip file on disk, which must be a
// regular file.
func ZipFileH1Sums(ctx context.Context, file string) (string, map[string]string, error) {
	f, err := localfile.OpenRegular(file)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		return "", nil, fmt.Errorf("%s is not a readable zip: %w", file, err)
	}
	h, sums, err := ZipH1Sums(ctx, zr)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", file, err)
	}
	return h, sums, nil
}

// UnpackedFile is a file a zip unpacks to: its cleaned name and its entry.
type UnpackedFile struct {
	Name string
	File *zip.File
}

// UnpackedFiles lists the files a provider package unpacks to, sorted by
// name, refusing what go-getter (OpenTofu's unpacker) refuses — an empty
// archive, a ".." path element anywhere — and what would unpack
// differently from machine to machine or not at all: names that leave the
// directory, are absolute or hold a backslash or NUL; a name given twice;
// a file where another entry needs a directory; no file at all; more than
// oci.MaxPackageFiles entries or oci.MaxUnpackedSize bytes.
func UnpackedFiles(zr *zip.Reader) ([]UnpackedFile, error) {
	switch {
	case len(zr.File) == 0:
		return nil, fmt.Errorf("the zip is empty (OpenTofu's unpacker refuses an empty archive)")
	case len(zr.File) > oci.MaxPackageFiles:
		return nil, fmt.Errorf("the zip has %d entries, more than the %d allowed", len(zr.File), oci.MaxPackageFiles)
	}
	var files []UnpackedFile
	dirs := map[string]bool{}
	seen := map[string]bool{}
	var total uint64
	for _, f := range zr.File {
		name, err := CleanZipName(f.Name)
		if err != nil {
			return nil, err
		}
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
		if strings.HasSuffix(f.Name, "/") || f.FileInfo().IsDir() {
			dirs[name] = true
			continue
		}
		if seen[name] {
			return nil, fmt.Errorf("zip holds %s twice", name)
		}
		seen[name] = true
		total += f.UncompressedSize64
		if total > MaxUnpackedSize {
			return nil, fmt.Errorf("zip unpacks to more than %d bytes", uint64(MaxUnpackedSize))
		}
		files = append(files, UnpackedFile{Name: name, File: f})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("the zip holds no files, directories only")
	}
	for _, f := range files {
		if dirs[f.Name] {
			return nil, fmt.Errorf("zip entry %s is a file, but other entries need it as a directory: it cannot be unpacked", f.Name)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// ReadEntries reads every file entry of a zip as an unpacker does (CRC-32
// and sizes checked), stopping when ctx ends; the first corrupt entry is
// the error.
func ReadEntries(ctx context.Context, zr *zip.Reader) error {
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") || f.FileInfo().IsDir() {
			continue
		}
		r, err := openEntry(ctx, f.Name, f)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, r)
		r.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func openEntry(ctx context.Context, name string, f *zip.File) (io.ReadCloser, error) {
	r, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("zip entry %s: %w", name, err)
	}
	return entryReader{Reader: localfile.Reader(ctx, r), Closer: r, name: name}, nil
}

// ZipFileH1 is ZipH1 for a zip file on disk.
func ZipFileH1(file string) (string, error) {
	return ZipFileH1Context(context.Background(), file)
}

// ZipFileH1Context is ZipH1Context for a zip file on disk, which must be a
// regular file.
func ZipFileH1Context(ctx context.Context, file string) (string, error) {
	f, err := localfile.OpenRegular(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		return "", fmt.Errorf("%s is not a readable zip: %w", file, err)
	}
	h, err := ZipH1Context(ctx, zr)
	if err != nil {
		return "", fmt.Errorf("%s: %w", file, err)
	}
	return h, nil
}

// CleanEntryName checks that an archive entry's name (zip or tar) unpacks
// inside the directory it is unpacked to, under the same name on every
// system, and returns it cleaned; a name of the directory itself (".",
// "./", "") cleans to "". Refused: absolute names, any "X:" prefix (a
// drive on Windows), ".." anywhere (go-getter, OpenTofu's unpacker,
// refuses those even when they stay inside), backslashes (a separator on
// Windows, part of the name elsewhere) and NUL. Errors begin with
// `entry "NAME"`.
func CleanEntryName(name string) (string, error) {
	if strings.ContainsAny(name, "\\\x00") {
		return "", fmt.Errorf("entry %q has an unsafe name: a backslash or NUL unpacks differently on different systems", name)
	}
	if path.IsAbs(name) || len(name) > 1 && name[1] == ':' {
		return "", fmt.Errorf("entry %q has an absolute name: it would be unpacked outside its directory", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("entry %q leaves the tree: a \"..\" element would be unpacked outside its directory (OpenTofu's unpacker refuses it)", name)
		}
	}
	if c := path.Clean(name); c != "." {
		return c, nil
	}
	return "", nil
}

// CleanZipName is CleanEntryName for a zip entry, which must name a file
// or directory below the root; its errors begin with `zip entry "NAME"`.
func CleanZipName(name string) (string, error) {
	c, err := CleanEntryName(name)
	switch {
	case err != nil:
		return "", fmt.Errorf("zip %w", err)
	case c == "":
		return "", fmt.Errorf("zip entry %q names no file", name)
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

// TrustedH1 is the one rule for trusting an h1 stored with a provider
// release: the provenance must record it for the platform, and the
// provenance's SHA256SUMS (the file the publisher signed) must list the
// platform's package under its recorded file name with the digest of the
// zip the index actually holds. Otherwise it returns "" and the zip must
// be downloaded and hashed (RemoteZipH1).
func TrustedH1(prov *oci.Provenance, files *oci.ProvenanceFiles, p names.Platform, zip ocispec.Descriptor) string {
	if prov == nil || files == nil || files.SHA256SUMS.Data == nil {
		return ""
	}
	pp, ok := prov.Platforms[p.String()]
	if !ok || pp.H1 == "" || pp.Filename == "" {
		return ""
	}
	sums, err := sha256sums.Parse(files.SHA256SUMS.Data)
	if err != nil || sums[pp.Filename] != zip.Digest.Encoded() {
		return ""
	}
	return pp.H1
}
