package testenv

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// GitRepo is a bare repository of a GitServer built object by object with
// git's plumbing (hash-object, mktree, commit-tree), for content no work
// tree can hold: a symbolic link whose target is megabytes long, a tree
// holding one subtree many times over.
type GitRepo struct {
	URL string
	t   testing.TB
	dir string
}

// NewRepo makes an empty bare repository NAME served by g.
func (g *GitServer) NewRepo(t testing.TB, name string) *GitRepo {
	t.Helper()
	r := &GitRepo{URL: "https://" + g.Host + "/" + name + ".git", t: t, dir: filepath.Join(g.Root, name+".git")}
	MustRun(t, "", gitEnv(g.Root), "git", "init", "-q", "--bare", "-b", "main", r.dir)
	return r
}

func gitEnv(home string) []string {
	return []string{"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=test",
		"GIT_COMMITTER_EMAIL=test@example.com", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
}

// git runs git in the repository with stdin and returns its trimmed
// standard output.
func (r *GitRepo) git(stdin io.Reader, args ...string) string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir", r.dir}, args...)...)
	cmd.Env, cmd.Stdin = gitEnv(r.dir), stdin
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// Blob stores content as a blob and returns its id.
func (r *GitRepo) Blob(content io.Reader) string {
	r.t.Helper()
	return r.git(content, "hash-object", "-w", "--stdin")
}

// GitEntry is an entry of a tree: Mode 100644 or 100755 (a file), 120000
// (a symbolic link, the blob its target) or 040000 (a tree).
type GitEntry struct {
	Mode, ID, Name string
}

// Tree stores a tree of entries and returns its id.
func (r *GitRepo) Tree(entries ...GitEntry) string {
	r.t.Helper()
	var b strings.Builder
	for _, e := range entries {
		kind := "blob"
		if e.Mode == "040000" {
			kind = "tree"
		}
		fmt.Fprintf(&b, "%s %s %s\t%s\n", e.Mode, kind, e.ID, e.Name)
	}
	return r.git(strings.NewReader(b.String()), "mktree")
}

// Commit commits tree on branch main, tags the commit with tags and
// returns its id.
func (r *GitRepo) Commit(tree string, tags ...string) string {
	r.t.Helper()
	parent := []string{}
	if head := r.git(nil, "for-each-ref", "--format=%(objectname)", "refs/heads/main"); head != "" {
		parent = []string{"-p", head}
	}
	id := r.git(strings.NewReader("crafted\n"), append([]string{"commit-tree", tree}, parent...)...)
	r.git(nil, "update-ref", "refs/heads/main", id)
	for _, tag := range tags {
		r.git(nil, "tag", tag, id)
	}
	return id
}
