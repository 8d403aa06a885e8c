// Package repolist enumerates repositories: a registry's catalog (GET
// /v2/_catalog), or the OCI layout directories of a layout tree, within
// bounds a hostile or broken registry cannot stretch (docs/catalogue.md,
// "What is held").
package repolist

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
)

// The bounds of one listing: MaxRepositories the repositories of a
// registry's catalog read, or the OCI layout directories of a layout tree
// found; MaxPages the pages a registry may split its catalog into, and
// MaxPageBytes each page's answer (the bound oras-go puts on a tag list's
// page). A listing beyond them fails with an oci.LimitError: a partial
// catalogue would silently drop what it held.
const (
	MaxRepositories = 100_000
	MaxPages        = 1000
	MaxPageBytes    = 4 << 20
)

// ErrCannotList is a registry that does not list its repositories to us:
// its catalog answers 401, 403 or 404, or an UNSUPPORTED error (GHCR,
// Docker Hub, ECR without ecr:DescribeRepositories). It is not a failure
// to reach the registry (a 5xx, a network error), which stays what
// Classify says it is. Errors that are it are a *CannotListError.
var ErrCannotList = errors.New("the registry does not list its repositories")

// CannotListError says which registry does not list, and how it said so.
type CannotListError struct {
	Registry string
	// Status is the HTTP status of the refusal; Codes its OCI error codes.
	Status int
	Codes  []string
	// TokenService is set when the registry's token service, not the
	// catalog itself, refused the catalog scope.
	TokenService bool
	Err          error
}

func (e *CannotListError) Error() string {
	how := fmt.Sprintf("GET /v2/_catalog: %d", e.Status)
	if e.TokenService {
		how = fmt.Sprintf("its token service refused the catalog scope: %d", e.Status)
	}
	if len(e.Codes) > 0 {
		how += " " + strings.Join(e.Codes, ", ")
	}
	return e.Registry + " does not list repositories (" + how + ")"
}

// Is makes a CannotListError an ErrCannotList for errors.Is.
func (e *CannotListError) Is(target error) bool { return target == ErrCannotList }

func (e *CannotListError) Unwrap() error { return e.Err }

// List lists the repositories of registry (host[:port]) whose names
// start with prefix, calling fn with each page's (in the registry's
// order, prefix included: "acme/providers/hashicorp/aws"), with client's
// credentials, TLS trust and etiquette. The catalog is read within bounds
// a hostile or broken registry cannot stretch: at most MaxRepositories
// names and MaxPages pages of at most MaxPageBytes, every page bringing a
// name not seen before. Where the catalog is lexically ordered
// (Distribution, Harbor and zot sort it), reading stops once it has run
// well past prefix. A registry that does not offer its catalog is an
// ErrCannotList.
//
// With registry oci.LayoutPrefix, prefix is a directory path prefix
// ("/srv/store/providers/") and the names are the paths of the OCI
// layouts (directories holding an oci-layout file) below it, as
// "oci-layout:PATH" would name them: see listLayouts.
func List(ctx context.Context, client *oci.Client, registry, prefix string, fn func(repos []string) error) error {
	if registry == oci.LayoutPrefix {
		return listLayouts(ctx, prefix, fn)
	}
	reg, err := client.Registry(registry)
	if err != nil {
		return err
	}
	reg.MaxMetadataBytes = MaxPageBytes
	b := catalogBounds{prefix: prefix, max: maxRepositories, maxPages: maxRepositoryPages}
	err = reg.Repositories(ctx, "", func(repos []string) error {
		page, err := b.page(repos)
		if err != nil {
			return err
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return err
			}
		}
		if b.done() {
			return errCatalogPassed
		}
		return nil
	})
	switch {
	case errors.Is(err, errCatalogPassed):
		return nil
	case err != nil && cannotList(err):
		return &CannotListError{Registry: registry, Status: oci.StatusCode(err), Codes: oci.ErrorCodes(err), TokenService: !catalogAnswered(err), Err: err}
	}
	return err
}

// The bounds, variables so that tests can lower them.
var (
	maxRepositories    = MaxRepositories
	maxRepositoryPages = MaxPages
	// catalogPastBound is how many names past its prefix an ordered
	// catalog is read (as many as oci reads a tag list past its bound).
	catalogPastBound = 256
)

var errCatalogPassed = errors.New("the catalog has passed its prefix")

// cannotList reports whether a catalog read failed because the registry
// does not offer it to us, rather than because it could not be reached.
func cannotList(err error) bool {
	switch oci.StatusCode(err) {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return true
	}
	return slices.Contains(oci.ErrorCodes(err), "UNSUPPORTED")
}

// catalogAnswered reports whether an error answer came from the catalog
// endpoint itself (not from a token service).
func catalogAnswered(err error) bool {
	u := oci.ErrorURL(err)
	return u == nil || u.Path == "/v2/_catalog"
}

// catalogBounds checks a catalog's pages as ListTagsBefore checks a tag
// list's: counts, a paging loop, the order, and how far past prefix the
// ordered list has run.
type catalogBounds struct {
	prefix        string
	max, maxPages int
	seen          map[string]bool
	pages, read   int
	past          int
	unordered     bool
	prev          string
}

// page checks one page and returns its names that start with prefix and
// were not seen before.
func (b *catalogBounds) page(repos []string) ([]string, error) {
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	b.pages++
	var out []string
	fresh := false
	for _, r := range repos {
		if b.read > 0 && r <= b.prev {
			b.unordered = true
		}
		b.read++
		b.prev = r
		if r > b.prefix && !strings.HasPrefix(r, b.prefix) {
			b.past++
		}
		if b.seen[r] {
			continue
		}
		b.seen[r], fresh = true, true
		if strings.HasPrefix(r, b.prefix) {
			out = append(out, r)
		}
	}
	switch {
	case b.read > b.max:
		return nil, oci.Beyond("the registry lists more than %d repositories", b.max)
	case b.pages > b.maxPages:
		return nil, oci.Beyond("the registry's catalog runs to more than %d pages", b.maxPages)
	case !fresh && len(repos) > 0:
		return nil, oci.Invalid("the registry's catalog pages in a loop (page %d repeats earlier repositories)", b.pages)
	}
	return out, nil
}

// done reports whether the ordered catalog has run catalogPastBound
// names past every name starting with prefix.
func (b *catalogBounds) done() bool { return !b.unordered && b.past >= catalogPastBound }

// maxLayoutDepth bounds how deep below its root a layout tree is read:
// templates have a handful of placeholders.
const maxLayoutDepth = 16

// layoutPage is how many layout paths listLayouts gives fn at once.
const layoutPage = 1000

// listLayouts lists the OCI layouts below the directory path prefix:
// the directories whose path starts with prefix and that hold an
// oci-layout file (a regular file: written last, so the layout is
// whole), named as the template wrote the prefix ("./store/acme/x" for
// "./store/"), not descending into a layout. A symbolic link is
// followed only to a layout inside the prefix, and never descended
// through (no loops, nothing outside the tree is read). A missing root
// holds nothing. At most MaxRepositories directories are read or found,
// maxLayoutDepth deep.
func listLayouts(ctx context.Context, prefix string, fn func(paths []string) error) error {
	root := prefix[:strings.LastIndex(prefix, "/")+1]
	dir := root
	if dir == "" {
		dir = "."
	}
	realRoot, err := filepath.EvalSymlinks(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing OCI layouts below %s: %w", prefix, err)
	}
	w := layoutWalk{ctx: ctx, prefix: prefix, root: root, realRoot: realRoot, fn: fn}
	if err := w.walk("", 0); err != nil {
		return err
	}
	return w.flush()
}

type layoutWalk struct {
	ctx            context.Context
	prefix, root   string
	realRoot       string
	fn             func([]string) error
	pending        []string
	visited, found int
}

// walk reads the directory root+rel (rel "" or ending in "/").
func (w *layoutWalk) walk(rel string, depth int) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.visited++; w.visited > maxRepositories {
		return oci.Beyond("the OCI layout tree below %s has more than %d directories", w.root, maxRepositories)
	}
	entries, err := os.ReadDir(w.path(rel))
	if err != nil {
		return fmt.Errorf("listing OCI layouts below %s: %w", w.prefix, err)
	}
	for _, e := range entries {
		name := rel + e.Name()
		if !strings.HasPrefix(w.root+name, w.prefix) && !strings.HasPrefix(w.prefix, w.root+name+"/") {
			continue
		}
		if err := w.entry(e, name, depth); err != nil {
			return err
		}
	}
	return nil
}

func (w *layoutWalk) entry(e fs.DirEntry, name string, depth int) error {
	full := w.path(name)
	switch {
	case e.Type()&fs.ModeSymlink != 0:
		if w.insidePrefix(full) && isLayoutDir(full) {
			return w.add(name)
		}
		return nil
	case !e.IsDir():
		return nil
	case isLayoutDir(full):
		return w.add(name)
	case depth+1 < maxLayoutDepth:
		return w.walk(name+"/", depth+1)
	}
	return nil
}

// path is the file system path of rel below root.
func (w *layoutWalk) path(rel string) string {
	if w.root == "" {
		return "./" + rel
	}
	return w.root + rel
}

// insidePrefix reports whether the symbolic link at p resolves to a path
// within the prefix (below the resolved root, starting with prefix).
func (w *layoutWalk) insidePrefix(p string) bool {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(w.realRoot, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return false
	}
	return strings.HasPrefix(w.root+filepath.ToSlash(rel), w.prefix)
}

// isLayoutDir reports whether dir holds an oci-layout file (a regular
// file, not a link to one).
func isLayoutDir(dir string) bool {
	fi, err := os.Lstat(filepath.Join(dir, ocispec.ImageLayoutFile))
	return err == nil && fi.Mode().IsRegular()
}

func (w *layoutWalk) add(name string) error {
	if w.found++; w.found > maxRepositories {
		return oci.Beyond("the OCI layout tree below %s holds more than %d layouts", w.root, maxRepositories)
	}
	w.pending = append(w.pending, w.root+name)
	if len(w.pending) >= layoutPage {
		return w.flush()
	}
	return nil
}

func (w *layoutWalk) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	page := w.pending
	w.pending = nil
	return w.fn(page)
}
