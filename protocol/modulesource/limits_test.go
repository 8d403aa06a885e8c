package modulesource

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// gitFixture is a git server and a guard that lets fetches reach it.
type gitFixture struct {
	git   *testenv.GitServer
	guard *guard
}

func newGitFixture(t *testing.T) *gitFixture {
	git := testenv.StartGitServer(t, testenv.OriginOptions{})
	allow, err := NewAllowList(git.Host)
	if err != nil {
		t.Fatal(err)
	}
	return &gitFixture{git: git, guard: &guard{next: testenv.NewCA(t).HTTPClient().Transport, allow: allow, budget: newBudget(MaxDownload)}}
}

// fetch runs fetchGit for ref of the repository at rawURL into a new work
// directory, and returns the work tree too.
func (f *gitFixture) fetch(t *testing.T, ctx context.Context, rawURL, ref string) (string, error) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	tree := filepath.Join(work, "tree")
	disk := newDiskAccount(context.Background())
	defer disk.close()
	_, err = fetchGit(ctx, f.guard, Source{Kind: KindGit, URL: u, Ref: ref}, work, tree, disk)
	return tree, err
}

// lower sets *v to low until the test ends.
func lower[T any](t *testing.T, v *T, low T) {
	old := *v
	*v = low
	t.Cleanup(func() { *v = old })
}

// within runs f and returns its error, failing the test when f has not
// returned after limit. limit is a guard against work that does not stop
// (years for the trees here), generous for a loaded machine: the bounds
// under test are counted (entries, bytes) or a context's end, and the
// time taken is only logged.
func within(t *testing.T, limit time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- f() }()
	select {
	case err := <-done:
		t.Logf("returned after %s", time.Since(start).Round(time.Millisecond))
		return err
	case <-time.After(limit):
		t.Fatalf("still running after %s: the work is not bounded", limit)
		return nil
	}
}

func wantRefused(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v, want refused: %s", err, want)
	}
}

// mainTF is a blob holding a module's main.tf.
func mainTF(r *testenv.GitRepo) testenv.GitEntry {
	return testenv.GitEntry{Mode: "100644", ID: r.Blob(strings.NewReader("# main\n")), Name: "main.tf"}
}

// A symbolic link's target is checked by the size the object store gives
// before anything is checked out: a 5,000-byte target (go-git would read
// it whole, the kernel refuse it) is refused, the work tree left unwritten.
func TestGitRefusesLongLinkTargets(t *testing.T) {
	f := newGitFixture(t)
	r := f.git.NewRepo(t, "longlink")
	target := r.Blob(strings.NewReader(strings.Repeat("d/", 2500)))
	r.Commit(r.Tree(mainTF(r), testenv.GitEntry{Mode: "120000", ID: target, Name: "far"}), "v1")
	tree, err := f.fetch(t, context.Background(), r.URL, "v1")
	wantRefused(t, err, "far is a symbolic link whose target is 5000 bytes long, more than 4096")
	if _, err := os.Stat(filepath.Join(tree, "main.tf")); !os.IsNotExist(err) {
		t.Errorf("main.tf was checked out before the refusal (%v)", err)
	}
}

// A link whose target is 80 MiB of zeros (a few hundred KiB of pack,
// under every download budget) is refused by its declared size as the
// pack arrives: the fetch allocates a fraction of the target, where go-git
// alone would hold it whole at least twice (indexing the pack, then
// reading the link to check it out).
func TestGitLinkTargetIsNeverHeldInMemory(t *testing.T) {
	const size = 80 << 20
	f := newGitFixture(t)
	r := f.git.NewRepo(t, "hugelink")
	target := r.Blob(io.LimitReader(zeros{}, size))
	r.Commit(r.Tree(mainTF(r), testenv.GitEntry{Mode: "120000", ID: target, Name: "huge"}), "v1")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := f.fetch(t, context.Background(), r.URL, "v1")
	runtime.ReadMemStats(&after)
	wantRefused(t, err, fmt.Sprintf("declares %d bytes, more than the %d", size, gitMaxObject))
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("the refused fetch allocated %d MiB", alloc>>20)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// A git tree holding one subtree twice, 40 times over (2^40 paths from
// 41 small trees), is refused from the object store once the walk has
// met 2*MaxFiles entries; go-git alone would walk it to check it out.
func TestGitRefusesTreeFanOut(t *testing.T) {
	f := newGitFixture(t)
	r := f.git.NewRepo(t, "fanout")
	r.Commit(treeFanOut(r, 40), "v1")
	err := within(t, time.Minute, func() error { _, err := f.fetch(t, context.Background(), r.URL, "v1"); return err })
	wantRefused(t, err, fmt.Sprintf("more than %d entries", 2*MaxFiles))
}

// treeFanOut is a tree holding main.tf and d, a tree of n levels, each
// holding the level below twice (a and b).
func treeFanOut(r *testenv.GitRepo, n int) string {
	level := r.Tree(testenv.GitEntry{Mode: "100644", ID: r.Blob(strings.NewReader("x")), Name: "x.tf"})
	for range n {
		level = r.Tree(testenv.GitEntry{Mode: "040000", ID: level, Name: "a"}, testenv.GitEntry{Mode: "040000", ID: level, Name: "b"})
	}
	return r.Tree(mainTF(r), testenv.GitEntry{Mode: "040000", ID: level, Name: "d"})
}

// What a pack inflates to is bounded, whatever it compresses to on the
// wire (limits lowered here: 2 GiB, 64 MiB per object and 256 MiB per
// delta chain in use): 4 MiB of zeros in a pack of a few KiB is refused
// past 3 MiB inflated, one 1 MiB object past 512 KiB, a delta rebuilding a
// 1 MiB file from another past 2 MiB for the chain.
func TestGitPackInflationBounded(t *testing.T) {
	f := newGitFixture(t)
	r := f.git.NewRepo(t, "inflating")
	var entries []testenv.GitEntry
	for i := range 4 {
		content := append(make([]byte, 1<<20-1), byte(i))
		entries = append(entries, testenv.GitEntry{Mode: "100644", ID: r.Blob(bytes.NewReader(content)), Name: fmt.Sprintf("z%d.bin", i)})
	}
	r.Commit(r.Tree(append(entries, mainTF(r))...), "v1")
	t.Run("total", func(t *testing.T) {
		lower(t, &gitMaxInflated, 3<<20)
		_, err := f.fetch(t, context.Background(), r.URL, "v1")
		wantRefused(t, err, "the pack inflates to more than 3145728 bytes")
	})
	t.Run("object", func(t *testing.T) {
		lower(t, &gitMaxObject, 512<<10)
		_, err := f.fetch(t, context.Background(), r.URL, "v1")
		wantRefused(t, err, "declares 1048576 bytes, more than the 524288")
	})
	t.Run("chain", func(t *testing.T) {
		lower(t, &gitMaxChain, 2<<20)
		h := f.git.NewRepo(t, "history")
		var last string
		for i := range 3 {
			content := pseudoRandom(1 << 20)
			content[1000*i] ^= 0xff // a small edit: git stores deltas
			last = h.Commit(h.Tree(mainTF(h), testenv.GitEntry{Mode: "100644", ID: h.Blob(bytes.NewReader(content)), Name: "lambda.zip"}))
		}
		_, err := f.fetch(t, context.Background(), h.URL, last) // a commit id: the whole history
		wantRefused(t, err, "more than the 2097152 a module fetch takes (go-git holds them all in memory at once)")
	})
	t.Run("within", func(t *testing.T) {
		tree, err := f.fetch(t, context.Background(), r.URL, "v1")
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(tree, "z3.bin")); err != nil || fi.Size() != 1<<20 {
			t.Fatalf("z3.bin: %v %v", fi, err)
		}
	})
}

func pseudoRandom(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// A clone stops at its context's end, also while it checks a tree whose
// walk would outlast it (the 2^40 paths of TestGitRefusesTreeFanOut, the
// entry bound lifted): Fetch returns with the deadline's error, and what the fetch
// wrote is removed and its disk given back.
func TestFetchReturnsAtItsDeadline(t *testing.T) {
	lower(t, &gitMaxFiles, 1<<40)
	f := newGitFixture(t)
	r := f.git.NewRepo(t, "slow")
	r.Commit(treeFanOut(r, 40), "v1")
	temp := t.TempDir()
	fetcher := newFetcher(t, f, temp)
	s := gitSource(t, r.URL, "v1")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := within(t, 30*time.Second, func() error { _, err := fetcher.Fetch(ctx, s); return err })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want the deadline", err)
	}
	waitFor(t, func() bool { entries, _ := os.ReadDir(temp); return len(entries) == 0 && TempDiskInUse() == 0 })
}

func newFetcher(t *testing.T, f *gitFixture, temp string) *Fetcher {
	fetcher, err := New(Config{Registry: "registry.invalid", Sources: []string{f.git.Host}, Transport: f.guard.next, TempDir: temp})
	if err != nil {
		t.Fatal(err)
	}
	return fetcher
}

func gitSource(t *testing.T, rawURL, ref string) Source {
	s, err := ParseSource("git::" + rawURL + "?ref=" + ref)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the abandoned fetch's files or disk were not given back within 30s")
		}
	}
}

// The temporary disk of all fetches in progress is bounded together
// (lowered here): a fetch that would pass the budget fails as busy (not
// refused), and a fetch removed gives its disk back.
func TestFetchesShareATempDiskBudget(t *testing.T) {
	f := newGitFixture(t)
	r := f.git.NewRepo(t, "sized")
	r.Commit(r.Tree(mainTF(r), testenv.GitEntry{Mode: "100644", ID: r.Blob(bytes.NewReader(pseudoRandom(40 << 10))), Name: "data.bin"}), "v1")
	// One fetch needs its pack (about 40 KiB, random data) and its tree
	// (40 KiB) at once, then keeps the tree: a budget of 100 KiB holds one
	// fetch, not two.
	SetTempDiskBudget(100 << 10)
	t.Cleanup(func() { SetTempDiskBudget(DefaultTempDisk) })
	fetcher := newFetcher(t, f, t.TempDir())
	s := gitSource(t, r.URL, "v1")
	first, err := fetcher.Fetch(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if held := TempDiskInUse(); held < 40<<10 || held > 41<<10 {
		t.Errorf("a fetch holding its tree holds %d bytes of the budget", held)
	}
	second, err := fetcher.Fetch(context.Background(), s)
	if !errors.Is(err, ErrBusy) || errors.Is(err, ErrRefused) {
		t.Fatalf("a second fetch beyond the budget: %v, %v, want busy", second, err)
	}
	if err := first.Charge(60 << 10); !errors.Is(err, ErrBusy) {
		t.Errorf("charging a package past the budget: %v, want busy", err)
	}
	first.Remove()
	if held := TempDiskInUse(); held != 0 {
		t.Errorf("%d bytes held once the fetches are removed", held)
	}
	second, err = fetcher.Fetch(context.Background(), s)
	if err != nil {
		t.Fatalf("once the first fetch was removed: %v", err)
	}
	second.Remove()
}

// Fetches running at once share the budget: each succeeds or fails as
// busy, and every byte is given back once they are removed.
func TestConcurrentFetchesShareTheBudget(t *testing.T) {
	f := newGitFixture(t)
	r := f.git.NewRepo(t, "shared")
	r.Commit(r.Tree(mainTF(r), testenv.GitEntry{Mode: "100644", ID: r.Blob(bytes.NewReader(pseudoRandom(40 << 10))), Name: "data.bin"}), "v1")
	SetTempDiskBudget(200 << 10) // about two fetches at their peak
	t.Cleanup(func() { SetTempDiskBudget(DefaultTempDisk) })
	fetcher := newFetcher(t, f, t.TempDir())
	s := gitSource(t, r.URL, "v1")
	errs := make(chan error, 6)
	for range cap(errs) {
		go func() {
			fetched, err := fetcher.Fetch(context.Background(), s)
			if err == nil {
				time.Sleep(20 * time.Millisecond) // hold the tree a while
				fetched.Remove()
			}
			errs <- err
		}()
	}
	stored := 0
	for range cap(errs) {
		switch err := <-errs; {
		case err == nil:
			stored++
		case !errors.Is(err, ErrBusy):
			t.Errorf("%v, want success or busy", err)
		}
	}
	if stored == 0 {
		t.Error("no fetch succeeded")
	}
	if held := TempDiskInUse(); held != 0 {
		t.Errorf("%d bytes held once every fetch is removed", held)
	}
}

// Entries of a tar.gz whose names clean to nothing count like any other,
// and what the stream inflates to is bounded (lowered here): 10 MiB of
// zeros in a skipped entry is refused past 1 MiB.
func TestUntarCountsEverything(t *testing.T) {
	many := make([]testenv.TarEntry, MaxFiles+1)
	for i := range many {
		many[i] = testenv.TarEntry{Name: "./", Dir: true}
	}
	for name, c := range map[string]struct {
		entries  []testenv.TarEntry
		inflated int64 // tarMaxInflated, when lowered
		want     string
	}{
		"unnamed entries": {many, 0, fmt.Sprintf("more than %d entries", MaxFiles)},
		"inflating":       {[]testenv.TarEntry{{Name: "main.tf"}, {Name: ".", Data: make([]byte, 10<<20)}}, 1 << 20, "inflates to more than 1048576 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			if c.inflated > 0 {
				lower(t, &tarMaxInflated, c.inflated)
			}
			file := filepath.Join(t.TempDir(), "m.tar.gz")
			if err := os.WriteFile(file, testenv.CraftTarGz(t, c.entries...), 0o644); err != nil {
				t.Fatal(err)
			}
			disk := newDiskAccount(context.Background())
			defer disk.close()
			err := untarGz(context.Background(), file, filepath.Join(t.TempDir(), "tree"), disk)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
}
