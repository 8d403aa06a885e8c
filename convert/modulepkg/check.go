package modulepkg

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
)

// OpenZip is OpenZipContext without a context.
func OpenZip(file string, allowNoRoot bool) (*Zip, error) {
	return OpenZipContext(context.Background(), file, allowNoRoot)
}

// OpenZipContext checks an existing module package zip (a regular file,
// readable, safe entry names, no links or special files, bounded size,
// every entry read as an unpacker reads it — CRC-32 and sizes —, a module
// at its root unless allowNoRoot) and hashes it; the file is pushed byte
// for byte. Reading stops when ctx ends.
func OpenZipContext(ctx context.Context, file string, allowNoRoot bool) (*Zip, error) {
	f, err := localfile.OpenRegular(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxSize {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d bytes a module package may have (oci-tofu pull module refuses it too)", file, fi.Size(), int64(MaxSize))
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("%s is not a readable zip: %w", file, err)
	}
	names, err := CheckZip(zr, MaxSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := checkModuleRoot(names, allowNoRoot); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := pkghash.ReadEntries(ctx, zr); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	sum, n, err := pkghash.SHA256(localfile.Reader(ctx, io.LimitReader(f, fi.Size()+1)))
	if err != nil {
		return nil, err
	}
	if n != fi.Size() {
		return nil, fmt.Errorf("%s changed while it was being read", file)
	}
	return &Zip{Path: file, Digest: digest.NewDigestFromEncoded(digest.SHA256, sum), Size: n, Files: names}, nil
}

// CheckZip checks every entry of a module package zip as unpacking
// will (names, kinds, clashes between files and directories, sizes as
// declared; pkghash.ReadEntries reads the contents), and returns the file
// entries' cleaned names, sorted.
func CheckZip(zr *zip.Reader, maxSize int64) ([]string, error) {
	if len(zr.File) > MaxFiles {
		return nil, fmt.Errorf("zip has %d entries, more than the %d allowed", len(zr.File), MaxFiles)
	}
	for _, f := range zr.File {
		if _, _, err := moduleEntryName(f); err != nil {
			return nil, err
		}
	}
	files, err := pkghash.UnpackedFiles(zr)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(files))
	var total uint64
	for i, f := range files {
		total += f.File.UncompressedSize64
		if total > uint64(maxSize) {
			return nil, fmt.Errorf("zip unpacks to more than %d bytes", maxSize)
		}
		names[i] = f.Name
	}
	return names, nil
}

// moduleEntryName validates a zip entry the way a safe unpacker must: no
// absolute paths, no ".." anywhere (go-getter, which OpenTofu unpacks with,
// refuses those too), no backslashes, no symbolic links or other special
// files.
func moduleEntryName(f *zip.File) (name string, dir bool, err error) {
	n := f.Name
	c, err := pkghash.CleanZipName(n)
	if err != nil {
		return "", false, err
	}
	mode := f.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		return "", false, fmt.Errorf("zip entry %q is a symbolic link; module packages may hold only files and directories", n)
	case mode.IsDir() || strings.HasSuffix(n, "/"):
		return c, true, nil
	case !mode.IsRegular():
		return "", false, fmt.Errorf("zip entry %q is a %s, not a regular file", n, mode.Type())
	}
	return c, false, nil
}
