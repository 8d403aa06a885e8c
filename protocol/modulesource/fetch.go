package modulesource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// Config is how a Fetcher reaches origins.
type Config struct {
	// Registry is the origin module registry's hostname (host or
	// host:port), contacted through service discovery unless Base is set.
	Registry string
	// Base, when set, is the registry's modules.v1 URL (a `host` block of
	// the CLI configuration).
	Base *url.URL
	// Sources are the hosts (HOST or HOST:PORT) module sources may be
	// fetched from, besides the registry itself.
	Sources []string
	// Transport makes the connections (nil: http.DefaultTransport); the
	// fetcher wraps it so that only allowed hosts are contacted.
	Transport http.RoundTripper
	// Token returns the registry's credentials (nil: TF_TOKEN_<host>);
	// they are sent to the registry's own host only.
	Token func(host string) string
	// TempDir holds fetches in progress (default os.TempDir()).
	TempDir string
}

// Fetcher resolves module versions at one origin registry and fetches
// their sources, contacting only allow-listed hosts.
type Fetcher struct {
	host    string
	allow   AllowList
	next    http.RoundTripper
	reg     *origin.Client
	tempDir string
}

// New checks c and makes a Fetcher.
func New(c Config) (*Fetcher, error) {
	if c.Transport == nil {
		c.Transport = http.DefaultTransport
	}
	if c.TempDir == "" {
		c.TempDir = os.TempDir()
	}
	allow, err := NewAllowList(append([]string{c.Registry}, c.Sources...)...)
	if err != nil {
		return nil, err
	}
	if c.Base != nil {
		if err := allow.check(c.Base); err != nil {
			return nil, fmt.Errorf("the modules.v1 URL of %s: %w", c.Registry, err)
		}
	}
	f := &Fetcher{host: c.Registry, allow: allow, next: c.Transport, tempDir: c.TempDir}
	f.reg = origin.NewClient(&guard{next: c.Transport, allow: allow})
	f.reg.HTTP.CheckRedirect = f.checkRedirect
	if c.Token != nil {
		f.reg.Token = c.Token
	}
	if c.Base != nil {
		if err := f.reg.SetModulesBase(c.Registry, c.Base); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Registry is the origin registry's hostname.
func (f *Fetcher) Registry() string { return f.host }

// checkRedirect re-checks each redirect before it is followed (the guard
// would refuse it too) and bounds their number.
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return f.allow.check(req.URL)
}

// Versions lists the versions the origin offers of mod.
func (f *Fetcher) Versions(ctx context.Context, mod names.Module) ([]string, error) {
	return f.reg.ModuleVersions(ctx, f.host, mod)
}

// Resolve asks the origin where version v of mod is and reads the
// location as a source address; a location on a host outside the
// allow-list is refused here, before any connection to it.
func (f *Fetcher) Resolve(ctx context.Context, mod names.Module, v string) (Source, error) {
	loc, err := f.reg.ModuleLocation(ctx, f.host, mod, v)
	if err != nil {
		return Source{}, err
	}
	s, err := ParseSource(loc)
	if err != nil {
		return Source{}, err
	}
	if err := f.allow.check(s.URL); err != nil {
		return Source{}, fmt.Errorf("module %s/%s %s: the origin's download answer: %w", f.host, mod, v, err)
	}
	return s, nil
}

// Fetched is a module source on disk, ready for modulepkg.Prepare.
type Fetched struct {
	// Dir is the module's directory (Source.Subdir of the fetched tree).
	Dir    string
	Source Source
	// Origin is the registry's hostname.
	Origin string
	// Commit is the git commit the ref resolved to ("" for archives).
	Commit string
	work   string
}

// Remove deletes what the fetch wrote.
func (f *Fetched) Remove() error {
	if f == nil {
		return nil
	}
	return os.RemoveAll(f.work)
}

// Fetch downloads s into a new temporary directory.
func (f *Fetcher) Fetch(ctx context.Context, s Source) (*Fetched, error) {
	work, err := os.MkdirTemp(f.tempDir, "oci-tofu-module-")
	if err != nil {
		return nil, err
	}
	out := &Fetched{Source: s, Origin: f.host, work: work}
	tree := filepath.Join(work, "tree")
	g := &guard{next: f.next, allow: f.allow, budget: newBudget(MaxDownload)}
	switch s.Kind {
	case KindGit:
		out.Commit, err = fetchGit(ctx, g, s, work, tree)
	default:
		hc := &http.Client{Transport: g, CheckRedirect: f.checkRedirect}
		err = fetchArchive(ctx, hc, s, work, tree)
	}
	if err == nil {
		out.Dir, err = moduleDir(tree, s.Subdir)
	}
	if err != nil {
		out.Remove()
		return nil, err
	}
	return out, nil
}

// moduleDir is the subdirectory of the fetched tree, which must be a
// directory inside it (not a link).
func moduleDir(tree, sub string) (string, error) {
	dir := filepath.Join(tree, filepath.FromSlash(sub))
	root, err1 := filepath.EvalSymlinks(tree)
	real, err2 := filepath.EvalSymlinks(dir)
	fi, err3 := os.Stat(real)
	rel, err4 := filepath.Rel(root, real)
	if err := errors.Join(err1, err2, err3, err4); err != nil || !fi.IsDir() || rel != filepath.Clean(filepath.FromSlash(sub)) && sub != "" {
		return "", fmt.Errorf("%w: the fetched source has no directory %q inside it", ErrRefused, sub)
	}
	return dir, nil
}
