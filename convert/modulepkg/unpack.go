package modulepkg

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
)

// Unpack is UnpackContext without a context.
func Unpack(zipFile, dir string, maxSize int64) ([]string, error) {
	return UnpackContext(context.Background(), zipFile, dir, maxSize)
}

// UnpackContext unpacks a module package zip into dir, which must not
// exist or be empty. It unpacks into a temporary directory next to dir and
// renames it into place only when every entry was written, refusing
// entries that would escape dir, links, and more than maxSize bytes in all
// (counted as written, not as declared). It returns the files written.
// When ctx ends it stops, and dir is left as it was.
func UnpackContext(ctx context.Context, zipFile, dir string, maxSize int64) ([]string, error) {
	if maxSize <= 0 {
		maxSize = MaxSize
	}
	zr, err := zip.OpenReader(zipFile)
	if err != nil {
		return nil, fmt.Errorf("module package is not a readable zip: %w", err)
	}
	defer zr.Close()
	names, err := CheckZip(&zr.Reader, maxSize)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, errors.New("module package holds no files")
	}
	if err := checkTargetDir(dir); err != nil {
		return nil, err
	}
	tmp, err := tempSibling(dir)
	if err != nil {
		return nil, err
	}
	if err := unpackAll(ctx, &zr.Reader, tmp, maxSize); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := replaceEmptyDir(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return names, nil
}

// tempSibling makes a temporary directory beside dir, to be renamed into
// place when complete.
func tempSibling(dir string) (string, error) {
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".oci-tofu-*")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}

// unpackAll writes every entry below tmp, at most maxSize bytes in all
// (counted as written, not as declared).
func unpackAll(ctx context.Context, zr *zip.Reader, tmp string, maxSize int64) error {
	remaining := maxSize
	for _, f := range zr.File {
		name, isDir, err := moduleEntryName(f)
		if err != nil {
			return err
		}
		target := filepath.Join(tmp, filepath.FromSlash(name))
		if isDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		n, err := unpackFile(ctx, f, target, remaining)
		if err != nil {
			return err
		}
		remaining -= n
	}
	return nil
}

// replaceEmptyDir renames tmp to dir. An empty directory may have appeared
// at dir meanwhile; only an empty one is replaced.
func replaceEmptyDir(tmp, dir string) error {
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", dir, err)
	}
	return os.Rename(tmp, dir)
}

func checkTargetDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty; unpack into a new or empty directory", dir)
	}
	return nil
}

func unpackFile(ctx context.Context, f *zip.File, target string, remaining int64) (int64, error) {
	r, err := f.Open()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", f.Name, err)
	}
	defer r.Close()
	mode := os.FileMode(0o644)
	if f.Mode()&0o111 != 0 {
		mode = 0o755
	}
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, localfile.Reader(ctx, io.LimitReader(r, remaining+1)))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("unpacking %s: %w", f.Name, err)
	}
	if n > remaining {
		return n, errors.New("module package unpacks to more than the size limit")
	}
	return n, nil
}
