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
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/filesystem"
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

// fetchGit clones s into dir (the work tree; the repository's objects
// go to work, outside it) and returns the commit checked out: shallow for
// a tag, a branch or the default branch; whole for a commit id.
func fetchGit(ctx context.Context, g *guard, s Source, work, dir string) (string, error) {
	gitTransport()
	ctx = withGuard(ctx, g)
	wt := &boundedFS{Filesystem: osfs.New(dir, osfs.WithBoundOS())}
	var repo *git.Repository
	var err error
	switch {
	case commitRef.MatchString(s.Ref):
		repo, err = clone(ctx, work, "whole", wt, &git.CloneOptions{URL: s.URL.String(), NoCheckout: true, Tags: git.NoTags})
		if err == nil {
			err = checkout(repo, plumbing.NewHash(s.Ref))
		}
	case s.Ref == "":
		repo, err = clone(ctx, work, "head", wt, shallow(s, ""))
	default:
		repo, err = clone(ctx, work, "tag", wt, shallow(s, plumbing.NewTagReferenceName(s.Ref)))
		if errors.Is(err, plumbing.ErrReferenceNotFound) || errors.Is(err, git.NoMatchingRefSpecError{}) {
			wt.reset()
			repo, err = clone(ctx, work, "branch", wt, shallow(s, plumbing.NewBranchReferenceName(s.Ref)))
		}
	}
	if err != nil {
		return "", gitError(s, wt, err)
	}
	head, err := repo.Head()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", redact(s.URL), err)
	}
	// go-git leaves a .git file naming the object store; it is no part
	// of the module (push module leaves .git out too).
	if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
		return "", err
	}
	if _, err := os.Lstat(filepath.Join(dir, ".gitmodules")); err == nil {
		return "", fmt.Errorf("%w: git %s: the repository has submodules, which pull-through does not fetch", ErrRefused, redact(s.URL))
	}
	return head.Hash().String(), nil
}

func shallow(s Source, ref plumbing.ReferenceName) *git.CloneOptions {
	return &git.CloneOptions{URL: s.URL.String(), ReferenceName: ref, SingleBranch: true, Depth: 1, Tags: git.NoTags}
}

// clone clones into a fresh object store under work (name: one per try).
func clone(ctx context.Context, work, name string, wt *boundedFS, o *git.CloneOptions) (*git.Repository, error) {
	objects := filepath.Join(work, "git-"+name)
	st := filesystem.NewStorageWithOptions(osfs.New(objects, osfs.WithBoundOS()), cache.NewObjectLRUDefault(),
		filesystem.Options{LargeObjectThreshold: 1 << 20})
	return git.CloneContext(ctx, st, wt, o)
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

// gitError says why a clone failed: a limit of the work tree, a refused
// request (kept as ErrRefused), or git's own error.
func gitError(s Source, wt *boundedFS, err error) error {
	if wt.err != nil {
		return fmt.Errorf("%w: git %s: %w", ErrRefused, redact(s.URL), wt.err)
	}
	if errors.Is(err, plumbing.ErrReferenceNotFound) || errors.Is(err, git.NoMatchingRefSpecError{}) {
		return fmt.Errorf("git %s: no tag or branch %q: %w", redact(s.URL), s.Ref, err)
	}
	return fmt.Errorf("git %s (ref %q): %w", redact(s.URL), s.Ref, err)
}
