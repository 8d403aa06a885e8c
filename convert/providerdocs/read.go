package providerdocs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"unicode/utf8"
)

// ReadDir reads the documentation tree dir: index.md (or
// index.html.markdown) at its root and the pages of each category's
// directories (Categories), each page's front matter parsed. Files of
// other extensions, other directories and deeper ones are skipped
// (Docs.Skipped). A symbolic link that leads out of dir, a file name
// that is not a page name (NameOK), two files for one page, a page that
// is not UTF-8 or whose front matter does not parse, or a tree past the
// limits is an error naming the file; so is a tree with no page.
func ReadDir(dir string) (*Docs, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("the documentation directory: %w", err)
	}
	defer root.Close()
	r := &treeReader{fsys: root.FS(), dir: dir, docs: &Docs{Format: Format, Pages: []Page{}}}
	if err := r.readTree(); err != nil {
		return nil, err
	}
	if len(r.docs.Pages) == 0 {
		return nil, fmt.Errorf("%s holds no documentation page (index.md, resources/*.md, data-sources/*.md, guides/*.md, …)", dir)
	}
	sortPages(r.docs.Pages)
	return r.docs, nil
}

// treeReader reads one tree within the limits.
type treeReader struct {
	fsys    fs.FS
	dir     string
	docs    *Docs
	bytes   int64
	entries int
}

// readTree reads the root's index and each category directory.
func (r *treeReader) readTree() error {
	entries, err := r.list(".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch {
		case e.dir && CategoryOf(e.name) != "":
			if err := r.readCategory(e.name); err != nil {
				return err
			}
		case !e.dir && pageFile(e.name) && slugOf(e.name) == "index":
			if err := r.readPage("index", e.name); err != nil {
				return err
			}
		default:
			r.skip(e)
		}
	}
	return nil
}

// readCategory reads the pages of one category directory.
func (r *treeReader) readCategory(dir string) error {
	entries, err := r.list(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.dir || !pageFile(e.name) {
			r.skip(e)
			continue
		}
		if err := r.readPage(CategoryOf(dir), e.path); err != nil {
			return err
		}
	}
	return nil
}

// entry is a directory entry, links followed inside the tree.
type entry struct {
	name, path string
	dir        bool
}

// list lists dir's directories and regular files; a link leading out
// of the tree (or nowhere) is an error.
func (r *treeReader) list(dir string) ([]entry, error) {
	des, err := fs.ReadDir(r.fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r.name(dir), err)
	}
	var out []entry
	for _, de := range des {
		if r.entries++; r.entries > maxEntries {
			return nil, fmt.Errorf("%s has more than %d files and directories", r.dir, maxEntries)
		}
		p := path.Join(dir, de.Name())
		mode := de.Type()
		if mode&fs.ModeSymlink != 0 {
			fi, err := fs.Stat(r.fsys, p)
			if err != nil {
				return nil, fmt.Errorf("%s is a symbolic link that does not lead to a file inside %s: %w", r.name(p), r.dir, err)
			}
			mode = fi.Mode().Type()
		}
		if mode.IsDir() || mode.IsRegular() {
			out = append(out, entry{name: de.Name(), path: p, dir: mode.IsDir()})
		}
	}
	return out, nil
}

// skip records e as no page of the tree.
func (r *treeReader) skip(e entry) {
	p := e.path
	if e.dir {
		p += "/"
	}
	r.docs.Skipped = append(r.docs.Skipped, p)
}

// name is p as the errors name it: in the directory given.
func (r *treeReader) name(p string) string {
	return path.Join(r.dir, p)
}

// pageFile reports whether name has a page's extension.
func pageFile(name string) bool {
	return strings.HasSuffix(name, ".md") || strings.HasSuffix(name, ".html.markdown")
}

// NameOK reports whether slug may name a page: 1 to MaxNameLength
// letters, digits, '_', '-' and '.', starting with a letter or a digit,
// with no "..".
func NameOK(slug string) bool {
	if slug == "" || len(slug) > MaxNameLength || strings.Contains(slug, "..") {
		return false
	}
	for i, c := range slug {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// readPage reads the page file p of category within the limits.
func (r *treeReader) readPage(category, p string) error {
	slug := slugOf(path.Base(p))
	if !NameOK(slug) {
		return fmt.Errorf("%s: %q is not a page name (letters, digits, '_', '-', '.', at most %d)", r.name(p), slug, MaxNameLength)
	}
	if old := r.docs.Find(category, slug); old != nil {
		return fmt.Errorf("%s and %s are both the %s page %s", r.name(old.Path), r.name(p), category, slug)
	}
	if len(r.docs.Pages) == MaxPages {
		return fmt.Errorf("%s has more than %d pages", r.dir, MaxPages)
	}
	src, err := r.readFile(p)
	if err != nil {
		return err
	}
	page, err := parsePage(src)
	if err != nil {
		return fmt.Errorf("%s: %w", r.name(p), err)
	}
	page.Category, page.Slug, page.Path = category, slug, p
	if page.Title == "" {
		page.Title = slug
	}
	r.docs.Pages = append(r.docs.Pages, page)
	return nil
}

// readFile reads p, at most MaxPageSize bytes and what is left of
// MaxTotalSize.
func (r *treeReader) readFile(p string) ([]byte, error) {
	f, err := r.fsys.Open(p)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r.name(p), err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxPageSize+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", r.name(p), err)
	case len(src) > MaxPageSize:
		return nil, fmt.Errorf("%s is larger than %d bytes, the most a documentation page may have", r.name(p), MaxPageSize)
	case r.bytes+int64(len(src)) > MaxTotalSize:
		return nil, fmt.Errorf("%s: the documentation pages add up to more than %d bytes", r.name(p), MaxTotalSize)
	case !utf8.Valid(src):
		return nil, fmt.Errorf("%s is not UTF-8 text", r.name(p))
	case bytes.IndexByte(src, 0) >= 0:
		return nil, errors.New(r.name(p) + " holds a NUL byte: not a text file")
	}
	r.bytes += int64(len(src))
	return src, nil
}
