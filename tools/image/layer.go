package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// file is one entry of a layer: a directory or a regular file.
type file struct {
	// Path inside the image, relative to / and without a trailing slash
	// ("etc/passwd", "tmp").
	Path string
	// Mode holds the permission bits, fs.ModeDir for directories and
	// fs.ModeSticky where wanted.
	Mode     fs.FileMode
	UID, GID int
	Data     []byte // regular files only
}

// dir is a directory entry.
func dir(p string, perm fs.FileMode, uid, gid int) file {
	return file{Path: p, Mode: fs.ModeDir | perm, UID: uid, GID: gid}
}

// rootFile is a regular file owned by root.
func rootFile(p string, perm fs.FileMode, data []byte) file {
	return file{Path: p, Mode: perm, Data: data}
}

// layer is a gzip-compressed tar layer held in memory, with the digests
// the manifest (compressed) and the config (diff_id, uncompressed) name.
type layer struct {
	Blob   []byte
	Desc   ocispec.Descriptor
	DiffID digest.Digest
}

// buildLayer writes files as a reproducible layer: entries sorted by path
// (parents before children, missing parents added as root-owned 0755
// directories), every mtime set to mtime, no user or group names, and a
// gzip stream without name or timestamp. The same files and mtime give
// the same bytes.
func buildLayer(files []file, mtime time.Time) (layer, error) {
	entries, err := withParents(files)
	if err != nil {
		return layer{}, err
	}
	var tarBuf bytes.Buffer
	if err := writeTar(&tarBuf, entries, mtime); err != nil {
		return layer{}, err
	}
	blob, err := gzipBytes(tarBuf.Bytes())
	if err != nil {
		return layer{}, err
	}
	return layer{
		Blob:   blob,
		Desc:   ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: digest.FromBytes(blob), Size: int64(len(blob))},
		DiffID: digest.FromBytes(tarBuf.Bytes()),
	}, nil
}

// withParents returns the entries sorted by path, with every missing
// parent directory added (root-owned, 0755). It refuses duplicate paths
// and paths that are absolute, unclean or reach outside the root.
func withParents(files []file) ([]file, error) {
	byPath := map[string]file{}
	for _, f := range files {
		if f.Path == "" || f.Path == "." || path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || strings.HasPrefix(f.Path, "../") {
			return nil, fmt.Errorf("layer entry %q: not a clean relative path", f.Path)
		}
		if _, dup := byPath[f.Path]; dup {
			return nil, fmt.Errorf("layer entry %q given twice", f.Path)
		}
		byPath[f.Path] = f
	}
	for _, f := range files {
		for p := path.Dir(f.Path); p != "."; p = path.Dir(p) {
			if parent, ok := byPath[p]; ok {
				if !parent.Mode.IsDir() {
					return nil, fmt.Errorf("layer entry %q: parent %q is not a directory", f.Path, p)
				}
				continue
			}
			byPath[p] = dir(p, 0o755, 0, 0)
		}
	}
	entries := make([]file, 0, len(byPath))
	for _, f := range byPath {
		entries = append(entries, f)
	}
	// A parent's path is a prefix of its children's, so it sorts first.
	slices.SortFunc(entries, func(a, b file) int { return strings.Compare(a.Path, b.Path) })
	return entries, nil
}

// writeTar writes the entries in order as a tar stream.
func writeTar(w io.Writer, entries []file, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, f := range entries {
		hdr := tarHeader(f, mtime)
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("layer entry %s: %w", f.Path, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return fmt.Errorf("layer entry %s: %w", f.Path, err)
			}
		}
	}
	return tw.Close()
}

// tarHeader is the header of one entry: numeric owner only, the fixed
// mtime, directories named with a trailing slash.
func tarHeader(f file, mtime time.Time) *tar.Header {
	mode := int64(f.Mode.Perm())
	if f.Mode&fs.ModeSticky != 0 {
		mode |= 0o1000 // c_ISVTX
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     f.Path,
		Mode:     mode,
		Uid:      f.UID,
		Gid:      f.GID,
		Size:     int64(len(f.Data)),
		ModTime:  mtime,
		Format:   tar.FormatPAX,
	}
	if f.Mode.IsDir() {
		hdr.Typeflag, hdr.Name, hdr.Size = tar.TypeDir, f.Path+"/", 0
	}
	return hdr
}

// gzipBytes compresses b without a file name or timestamp in the gzip
// header, so the output depends only on b (and the compress/flate of the
// Go release that builds the image).
func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
