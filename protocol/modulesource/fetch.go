package modulesource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"

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
	disk   *diskAccount
}

// Remove deletes what the fetch wrote and gives its disk back to the
// process's budget (SetTempDiskBudget).
func (f *Fetched) Remove() error {
	if f == nil {
		return nil
	}
	err := os.RemoveAll(f.work)
	f.disk.close()
	return err
}

// Charge counts n more bytes of temporary disk against the fetch (the
// package packed from its tree), given back by Remove; it fails with
// ErrBusy when the process's budget is spent.
func (f *Fetched) Charge(n int64) error { return f.disk.charge(n) }

// Fetch downloads s into a new temporary directory, within the process's
// temporary-disk budget. It returns when ctx ends even if work it started
// cannot stop at once (go-git indexing a pack it has received): that work
// runs on, bounded by the pack's limits, and its files are removed and
// its disk given back when it ends.
func (f *Fetcher) Fetch(ctx context.Context, s Source) (*Fetched, error) {
	work, err := os.MkdirTemp(f.tempDir, "oci-tofu-module-")
	if err != nil {
		return nil, err
	}
	out := &Fetched{Source: s, Origin: f.host, work: work, disk: newDiskAccount(ctx)}
	done := make(chan error, 1)
	go func() { done <- recovered(func() error { return f.fetchInto(ctx, out) }) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		go func() {
			<-done
			out.Remove()
		}()
		return nil, fmt.Errorf("fetching %s: %w (the fetch is abandoned)", origin.RedactURL(s.URL), ctx.Err())
	}
	if err != nil {
		out.Remove()
		return nil, err
	}
	return out, nil
}

// fetchInto fetches out.Source into out's work directory.
func (f *Fetcher) fetchInto(ctx context.Context, out *Fetched) error {
	s := out.Source
	tree := filepath.Join(out.work, "tree")
	g := &guard{next: f.next, allow: f.allow, budget: newBudget(MaxDownload)}
	var err error
	switch s.Kind {
	case KindGit:
		out.Commit, err = fetchGit(ctx, g, s, out.work, tree, out.disk)
	default:
		hc := &http.Client{Transport: g, CheckRedirect: f.checkRedirect}
		err = fetchArchive(ctx, hc, s, out.work, tree, out.disk)
	}
	if err != nil {
		return err
	}
	out.Dir, err = moduleDir(tree, s.Subdir)
	return err
}

// recovered runs fn; a panic in it (a bug some input met) becomes its
// error instead of ending the process: the goroutines a fetch starts are
// outside the callers' recovery boundaries.
func recovered(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error (a bug; please report it): panic: %v\n%s", p, debug.Stack())
		}
	}()
	return fn()
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
