package modulesource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// Git is fetched with go-git, in process, rather than with the git CLI:
// its HTTP transport is ours (ctxGuard), so every connection and redirect
// of a clone goes through the fetch's allow-list and download budget, and
// no git configuration, credential helper or other protocol on the host
// takes part. docs/modules.md, "Pull-through", weighs the choice.

var installGit sync.Once

// gitTransport installs ctxGuard as go-git's https transport (go-git keeps
// one per process). Requests made outside a fetch are refused.
func gitTransport() {
	installGit.Do(func() {
		client.InstallProtocol("https", githttp.NewClientWithOptions(&http.Client{Transport: ctxGuard{}},
			&githttp.ClientOptions{RedirectPolicy: githttp.FollowInitialRedirects}))
		// Only https: no other go-git protocol ever serves a module fetch.
		for _, p := range []string{"http", "file", "ssh", "git"} {
			client.InstallProtocol(p, nil)
		}
	})
}

var commitRef = regexp.MustCompile(`^[0-9a-f]{40}$`)

// gitClone is one git fetch: its work tree, bounded as it is written,
// the object store of its last try, and the first error the fetch's own
// checks stopped it with (go-git may pass it on unwrapped).
type gitClone struct {
	ctx   context.Context
	src   Source
	work  string
	wt    *boundedFS
	disk  *diskAccount
	stop  *stopCause
	store *checkedStorage
}

// fetchGit clones s into dir (the work tree; the repository's objects
// go to work, outside it) and returns the commit checked out: shallow for
// a tag, a branch or the default branch; whole for a commit id. The pack
// is checked as it arrives (packChecker) and the commit's tree from the
// object store (checkTree) before anything is checked out; what is
// written counts against disk.
func fetchGit(ctx context.Context, g *guard, s Source, work, dir string, disk *diskAccount) (string, error) {
	gitTransport()
	ctx = withGuard(ctx, g)
	stop := &stopCause{}
	c := &gitClone{ctx: ctx, src: s, work: work, disk: disk, stop: stop,
		wt: &boundedFS{Filesystem: osfs.New(dir, osfs.WithBoundOS()), ctx: ctx, disk: disk, stop: stop}}
	repo, err := c.clone()
	if c.store != nil {
		defer c.store.Close()
	}
	if err != nil {
		return "", c.error(err)
	}
	h, err := c.commit(repo)
	if err == nil {
		err = c.checkTree(repo, h)
	}
	if err == nil {
		err = checkout(repo, h)
	}
	if err != nil {
		return "", c.error(err)
	}
	return h.String(), c.finish(dir)
}

// clone fetches the objects the ref needs, checking nothing out yet.
func (c *gitClone) clone() (*git.Repository, error) {
	s := c.src
	switch {
	case commitRef.MatchString(s.Ref):
		return c.try("whole", &git.CloneOptions{URL: s.URL.String(), NoCheckout: true, Tags: git.NoTags})
	case s.Ref == "":
		return c.try("head", shallow(s, ""))
	}
	repo, err := c.try("tag", shallow(s, plumbing.NewTagReferenceName(s.Ref)))
	if errors.Is(err, plumbing.ErrReferenceNotFound) || errors.Is(err, git.NoMatchingRefSpecError{}) {
		c.wt.reset()
		repo, err = c.try("branch", shallow(s, plumbing.NewBranchReferenceName(s.Ref)))
	}
	return repo, err
}

func shallow(s Source, ref plumbing.ReferenceName) *git.CloneOptions {
	return &git.CloneOptions{URL: s.URL.String(), ReferenceName: ref, SingleBranch: true, Depth: 1, Tags: git.NoTags, NoCheckout: true}
}

// try clones into a fresh object store under work (name: one per try).
func (c *gitClone) try(name string, o *git.CloneOptions) (*git.Repository, error) {
	if c.store != nil {
		c.store.Close()
	}
	c.store = newCheckedStorage(c.ctx, filepath.Join(c.work, "git-"+name), c.disk, c.stop)
	return git.CloneContext(c.ctx, c.store, c.wt, o)
}

// commit is the commit to check out: the ref's, or the commit id asked.
func (c *gitClone) commit(repo *git.Repository) (plumbing.Hash, error) {
	if commitRef.MatchString(c.src.Ref) {
		return plumbing.NewHash(c.src.Ref), nil
	}
	head, err := repo.Head()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return head.Hash(), nil
}

func checkout(repo *git.Repository, h plumbing.Hash) error {
	w, err := repo.Worktree()
	if err != nil {
		return err
	}
	if err := w.Checkout(&git.CheckoutOptions{Hash: h, Force: true}); err != nil {
		return fmt.Errorf("commit %s: %w", h, err)
	}
	return nil
}

// finish leaves dir holding the module's files alone: go-git's .git file
// naming the object store (no part of the module; push module leaves .git
// out too) and the object store itself are removed, the latter's disk
// given back.
func (c *gitClone) finish(dir string) error {
	if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
		return err
	}
	if _, err := os.Lstat(filepath.Join(dir, ".gitmodules")); err == nil {
		return fmt.Errorf("%w: git %s: the repository has submodules, which pull-through does not fetch", ErrRefused, origin.RedactURL(c.src.URL))
	}
	c.store.Close()
	if err := os.RemoveAll(c.store.dir); err != nil {
		return err
	}
	c.disk.refund(c.store.charged())
	return nil
}

// error says why a clone failed: what the fetch's own checks stopped it
// with (a limit, refused; the disk budget; the context), or git's own
// error.
func (c *gitClone) error(err error) error {
	s := c.src
	if cause := c.stop.get(); cause != nil {
		return fmt.Errorf("git %s: %w", origin.RedactURL(s.URL), cause)
	}
	if errors.Is(err, plumbing.ErrReferenceNotFound) || errors.Is(err, git.NoMatchingRefSpecError{}) {
		return fmt.Errorf("git %s: no tag or branch %q: %w", origin.RedactURL(s.URL), s.Ref, err)
	}
	return fmt.Errorf("git %s (ref %q): %w", origin.RedactURL(s.URL), s.Ref, err)
}

// stopCause keeps the first error the fetch's own checks stopped a clone
// with.
type stopCause struct {
	mu  sync.Mutex
	err error
}

// set records err unless an error was recorded before, and returns it.
func (s *stopCause) set(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
	return err
}

func (s *stopCause) get() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *stopCause) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = nil
}
