package modulesource

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// A git work tree is bounded: more files or bytes than the limits
// (lowered here; 100,000 files and 1 GiB in use) are refused, whatever
// the pack's compressed size.
func TestGitWorkTreeBounded(t *testing.T) {
	git := testenv.StartGitServer(t, testenv.OriginOptions{})
	dir := t.TempDir()
	for i := 0; i < 5; i++ {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.tf", i)), []byte(strings.Repeat("# zeros compress well\n", 200)), 0o644)
	}
	raw, _ := git.AddRepo(t, "many", testenv.GitCommit{Tree: dir, Tags: []string{"v1"}})
	u, _ := url.Parse(raw)
	allow, _ := NewAllowList(git.Host)
	g := &guard{next: testenv.NewCA(t).HTTPClient().Transport, allow: allow, budget: newBudget(MaxDownload)}
	disk := newDiskAccount(context.Background())
	defer disk.close()
	for _, c := range []struct {
		files int
		bytes int64
		want  string
	}{{3, 1 << 20, "more than 3 files"}, {100, 2000, "more than 2000 bytes"}} {
		gitMaxFiles, gitMaxBytes = c.files, c.bytes
		work := t.TempDir()
		_, err := fetchGit(context.Background(), g, Source{Kind: KindGit, URL: u, Ref: "v1"}, work, filepath.Join(work, "tree"), disk)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("limits %d files, %d bytes: %v", c.files, c.bytes, err)
		}
	}
	gitMaxFiles, gitMaxBytes = MaxFiles, MaxTreeSize
	// What the git server sends counts against the fetch's download budget.
	small := &guard{next: g.next, allow: allow, budget: newBudget(300)}
	work := t.TempDir()
	if _, err := fetchGit(context.Background(), small, Source{Kind: KindGit, URL: u, Ref: "v1"}, work, filepath.Join(work, "tree"), disk); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "larger than 300 bytes") {
		t.Errorf("a 300-byte download budget: %v", err)
	}
	work = t.TempDir()
	if _, err := fetchGit(context.Background(), g, Source{Kind: KindGit, URL: u, Ref: "v1"}, work, filepath.Join(work, "tree"), disk); err != nil {
		t.Errorf("within the limits: %v", err)
	}
}
