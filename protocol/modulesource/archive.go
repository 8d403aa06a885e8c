package modulesource

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"

	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// fetchArchive downloads an archive source (bounded) into work and
// unpacks it into dir, charging both to disk; the archive is removed, and
// its disk given back, once unpacked.
func fetchArchive(ctx context.Context, hc *http.Client, s Source, work, dir string, disk *diskAccount) error {
	file := filepath.Join(work, "archive")
	size, err := download(ctx, hc, s, file, disk)
	if err != nil {
		return err
	}
	if err := unpackArchive(ctx, s, file, dir, disk); err != nil {
		return err
	}
	if err := os.Remove(file); err != nil {
		return err
	}
	disk.refund(size)
	return nil
}

func unpackArchive(ctx context.Context, s Source, file, dir string, disk *diskAccount) error {
	if s.Archive == "zip" {
		// Go's zip reader holds entries to their declared sizes, which
		// the unpacker bounds: charge what they declare.
		if err := disk.charge(zipDeclaredSize(file)); err != nil {
			return err
		}
		if _, err := modulepkg.UnpackContext(ctx, file, dir, MaxTreeSize); err != nil {
			return fmt.Errorf("%w: the zip from %s: %w", ErrRefused, origin.RedactURL(s.URL), err)
		}
		return nil
	}
	if err := untarGz(ctx, file, dir, disk); err != nil {
		if errors.Is(err, ErrBusy) || ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%w: the tar.gz from %s: %w", ErrRefused, origin.RedactURL(s.URL), err)
	}
	return nil
}

// zipDeclaredSize is what a zip's entries declare they unpack to, at most
// MaxTreeSize (beyond it the unpacker refuses the zip); 0 for a file that
// is no readable zip (the unpacker says why).
func zipDeclaredSize(file string) int64 {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return 0
	}
	defer zr.Close()
	var total uint64
	for _, f := range zr.File {
		if total += f.UncompressedSize64; total > uint64(MaxTreeSize) {
			return 0
		}
	}
	return int64(total)
}

// download writes the archive to file, refusing more than MaxDownload
// bytes, and returns its size; no credential is sent.
func download(ctx context.Context, hc *http.Client, s Source, file string, disk *diskAccount) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL.String(), nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("downloading %s: %s", origin.RedactURL(s.URL), resp.Status)
	}
	if resp.ContentLength > MaxDownload {
		return 0, fmt.Errorf("%w: %s announces %d bytes, more than %d", ErrRefused, origin.RedactURL(s.URL), resp.ContentLength, int64(MaxDownload))
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(&chargedWriter{w: f, disk: disk}, localfile.Reader(ctx, io.LimitReader(resp.Body, MaxDownload+1)))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("downloading %s: %w", origin.RedactURL(s.URL), err)
	}
	if n > MaxDownload {
		return n, fmt.Errorf("%w: %s is larger than %d bytes", ErrRefused, origin.RedactURL(s.URL), int64(MaxDownload))
	}
	return n, nil
}

// chargedWriter charges what it writes to a fetch's disk account first.
type chargedWriter struct {
	w    io.Writer
	disk *diskAccount
}

func (c *chargedWriter) Write(p []byte) (int, error) {
	if err := c.disk.charge(int64(len(p))); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// tarMaxInflated bounds what a tar.gz inflates to: the tree's bytes and,
// per entry, room for its headers (an entry skipped, or declaring data a
// directory or link does not hold, is read through too).
var tarMaxInflated = int64(MaxTreeSize) + int64(MaxFiles)*2048

// untarGz unpacks a tar.gz safely into dir: names relative and without
// "..", only directories, regular files and symbolic links (whose targets
// modulepkg's walk later refuses when they leave the tree), at most
// MaxFiles entries (those whose names clean to nothing included) and
// MaxTreeSize bytes, checked on each header before its content is read,
// and at most tarMaxInflated bytes inflated in all.
func untarGz(ctx context.Context, file, dir string, disk *diskAccount) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("not a gzip stream: %w", err)
	}
	inflated := &inflatedLimit{r: localfile.Reader(ctx, zr), left: tarMaxInflated}
	tr := tar.NewReader(inflated)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	u := &untar{dir: dir, disk: disk}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the tar stream: %w", err)
		}
		if err := u.entry(h, tr); err != nil {
			return err
		}
	}
}

// inflatedLimit refuses a stream longer than left bytes.
type inflatedLimit struct {
	r    io.Reader
	left int64
}

func (l *inflatedLimit) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("the tar stream inflates to more than %d bytes", tarMaxInflated)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

type untar struct {
	dir   string
	disk  *diskAccount
	files int
	total int64
	links map[string]bool // names of the links written so far
}

// throughLink refuses a name below a link written earlier: writing there
// would follow the link, maybe out of the tree.
func (u *untar) throughLink(name string) error {
	for p := path.Dir(name); p != "."; p = path.Dir(p) {
		if u.links[p] {
			return fmt.Errorf("entry %q lies below the symbolic link %q", name, p)
		}
	}
	return nil
}

func (u *untar) entry(h *tar.Header, r io.Reader) error {
	if u.files++; u.files > MaxFiles {
		return fmt.Errorf("more than %d entries", MaxFiles)
	}
	name, err := pkghash.CleanEntryName(h.Name)
	if err != nil || name == "" {
		return err
	}
	if err := u.throughLink(name); err != nil {
		return err
	}
	target := filepath.Join(u.dir, filepath.FromSlash(name))
	switch h.Typeflag {
	case tar.TypeDir:
		return os.MkdirAll(target, 0o755)
	case tar.TypeReg:
		if h.Size < 0 || h.Size > MaxTreeSize-u.total {
			return fmt.Errorf("entry %q declares %d bytes: the tree would exceed %d bytes", h.Name, h.Size, int64(MaxTreeSize))
		}
		u.total += h.Size
		return writeEntry(target, h, r, u.disk)
	case tar.TypeSymlink:
		if path.IsAbs(h.Linkname) || strings.Contains(h.Linkname, "\\") {
			return fmt.Errorf("entry %q is a link to the absolute path %q", h.Name, h.Linkname)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if u.links == nil {
			u.links = map[string]bool{}
		}
		u.links[name] = true
		return os.Symlink(h.Linkname, target)
	case tar.TypeXGlobalHeader:
		return nil
	}
	return fmt.Errorf("entry %q is of type %q: only files, directories and symbolic links are taken", h.Name, string(h.Typeflag))
}

func writeEntry(target string, h *tar.Header, r io.Reader, disk *diskAccount) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if h.Mode&0o111 != 0 {
		mode = 0o755
	}
	// O_EXCL: an entry never writes through a link or over another entry.
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("entry %q: %w", h.Name, err)
	}
	n, err := io.Copy(&chargedWriter{w: f, disk: disk}, io.LimitReader(r, h.Size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != h.Size {
		err = fmt.Errorf("entry %q is truncated", h.Name)
	}
	return err
}
