package modulesource

import (
	"archive/tar"
	"compress/gzip"
	"context"
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
)

// fetchArchive downloads an archive source (bounded) into work and
// unpacks it into dir.
func fetchArchive(ctx context.Context, hc *http.Client, s Source, work, dir string) error {
	file := filepath.Join(work, "archive")
	if err := download(ctx, hc, s, file); err != nil {
		return err
	}
	if s.Archive == "zip" {
		if _, err := modulepkg.UnpackContext(ctx, file, dir, MaxTreeSize); err != nil {
			return fmt.Errorf("%w: the zip from %s: %w", ErrRefused, redact(s.URL), err)
		}
		return nil
	}
	if err := untarGz(ctx, file, dir); err != nil {
		return fmt.Errorf("%w: the tar.gz from %s: %w", ErrRefused, redact(s.URL), err)
	}
	return nil
}

// download writes the archive to file, refusing more than MaxDownload
// bytes; no credential is sent.
func download(ctx context.Context, hc *http.Client, s Source, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL.String(), nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("downloading %s: %s", redact(s.URL), resp.Status)
	}
	if resp.ContentLength > MaxDownload {
		return fmt.Errorf("%w: %s announces %d bytes, more than %d", ErrRefused, redact(s.URL), resp.ContentLength, int64(MaxDownload))
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, localfile.Reader(ctx, io.LimitReader(resp.Body, MaxDownload+1)))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("downloading %s: %w", redact(s.URL), err)
	}
	if n > MaxDownload {
		return fmt.Errorf("%w: %s is larger than %d bytes", ErrRefused, redact(s.URL), int64(MaxDownload))
	}
	return nil
}

// untarGz unpacks a tar.gz safely into dir: names relative and without
// "..", only directories, regular files and symbolic links (whose targets
// modulepkg's walk later refuses when they leave the tree), at most
// MaxFiles entries and MaxTreeSize bytes, checked on each header before
// its content is read.
func untarGz(ctx context.Context, file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("not a gzip stream: %w", err)
	}
	tr := tar.NewReader(localfile.Reader(ctx, zr))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	u := &untar{dir: dir}
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

type untar struct {
	dir   string
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
	name, err := pkghash.CleanEntryName(h.Name)
	if err != nil || name == "" {
		return err
	}
	if u.files++; u.files > MaxFiles {
		return fmt.Errorf("more than %d entries", MaxFiles)
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
		return writeEntry(target, h, r)
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

func writeEntry(target string, h *tar.Header, r io.Reader) error {
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
	n, err := io.Copy(f, io.LimitReader(r, h.Size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != h.Size {
		err = fmt.Errorf("entry %q is truncated", h.Name)
	}
	return err
}
