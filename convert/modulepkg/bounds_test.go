package modulepkg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// returns runs f and returns its error, failing the test when f has not
// returned after a minute: a guard against a hung walk, not a measure of
// its speed (the bounds are counted work, asserted as such; a loaded
// machine may take any time to do it). The time taken is logged.
func returns(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- f() }()
	select {
	case err := <-done:
		t.Logf("returned after %s", time.Since(start).Round(time.Millisecond))
		return err
	case <-time.After(time.Minute):
		t.Fatal("still running after a minute: the walk is not bounded")
		return nil
	}
}

// linkFanOut makes d0 (empty) and d1…dN under dir, each dK holding two
// links, a and b, to d(K-1): N links deep, 2^N paths to walk.
func linkFanOut(t *testing.T, dir string, n int) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, "d0"), 0o755))
	for k := 1; k <= n; k++ {
		d := filepath.Join(dir, fmt.Sprintf("d%d", k))
		must(t, os.MkdirAll(d, 0o755))
		for _, l := range []string{"a", "b"} {
			must(t, os.Symlink(fmt.Sprintf("../d%d", k-1), filepath.Join(d, l)))
		}
	}
}

// A tree whose directory links fan out (2^40 paths through 80 links) is
// refused once the walk has followed maxWalkLinks links, naming the bound,
// by Pack, Write and HashTree alike.
func TestPackModuleRefusesLinkFanOut(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"main.tf": ""})
	linkFanOut(t, dir, 40)
	ctx := context.Background()
	for name, f := range map[string]func() error{
		"Write":    func() error { _, err := Write(ctx, io.Discard, dir, Options{}); return err },
		"HashTree": func() error { _, _, err := HashTree(ctx, dir, Options{}); return err },
		"Pack":     func() error { _, err := Pack(ctx, dir, Options{TempDir: t.TempDir()}); return err },
	} {
		err := returns(t, f)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d symbolic links", maxWalkLinks)) {
			t.Errorf("%s: %v, want the link bound named", name, err)
		}
	}
}

// Each entry is counted each time the walk meets it: one directory of
// 3,000 files reached through 100 links is 300,000 entries, refused once
// the walk has met maxWalkEntries (the files are excluded, so the file
// bound never applies).
func TestPackModuleBoundsEntriesWalked(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"main.tf": "", ".terraformignore": "*.skip\n"})
	shared := filepath.Join(dir, "shared")
	must(t, os.MkdirAll(shared, 0o755))
	for i := range 3000 {
		must(t, os.WriteFile(filepath.Join(shared, fmt.Sprintf("%04d.skip", i)), nil, 0o644))
	}
	for i := range 100 {
		must(t, os.Symlink("shared", filepath.Join(dir, fmt.Sprintf("l%03d", i))))
	}
	err := returns(t, func() error { _, err := Write(context.Background(), io.Discard, dir, Options{}); return err })
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d entries", maxWalkEntries)) {
		t.Fatalf("%v, want the entry bound named", err)
	}
}

// The walk stops when its context ends, with the context's error, even
// within its bounds: at the first entry after the end, whatever the
// machine's speed (the context ends after a count of checks, not a time).
func TestPackModuleWalkStopsWithItsContext(t *testing.T) {
	defer func(l, e int) { maxWalkLinks, maxWalkEntries = l, e }(maxWalkLinks, maxWalkEntries)
	maxWalkLinks, maxWalkEntries = 1<<40, 1<<40
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"main.tf": ""})
	linkFanOut(t, dir, 40)
	ctx := endsAfterChecks(1000)
	err := returns(t, func() error { _, err := Write(ctx, io.Discard, dir, Options{}); return err })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want the context's error", err)
	}
	if n := ctx.checksAfterEnd(); n != 0 {
		t.Errorf("the walk checked its context %d more times after it ended, want it to stop at once", n)
	}
}

// checkCountdown is a context that ends (Canceled) at its n-th Err check
// and counts the checks made after that.
type checkCountdown struct {
	context.Context
	mu    sync.Mutex
	left  int
	after int
	done  chan struct{}
}

func endsAfterChecks(n int) *checkCountdown {
	return &checkCountdown{Context: context.Background(), left: n, done: make(chan struct{})}
}

func (c *checkCountdown) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.left > 0:
		c.left--
		return nil
	case c.left == 0:
		c.left = -1
		close(c.done)
	default:
		c.after++
	}
	return context.Canceled
}

func (c *checkCountdown) Done() <-chan struct{} { return c.done }

func (c *checkCountdown) checksAfterEnd() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.after
}

// .terraformignore is bounded: a file of 1 MiB of rules is refused before
// any rule is tried; rules within the count but costly to match (long
// patterns against long names) stop at the matching budget. Each is
// refused naming the bound.
func TestPackModuleBoundsIgnoreRules(t *testing.T) {
	var huge strings.Builder
	for i := 0; huge.Len() < 1<<20; i++ {
		fmt.Fprintf(&huge, "**/n%d*x\n", i)
	}
	for name, c := range map[string]struct {
		rules, want string
	}{
		"1 MiB of rules":  {huge.String(), fmt.Sprintf("larger than %d bytes", maxIgnoreFile)},
		"too many rules":  {strings.Repeat("*.x\n", maxIgnoreRules+1), fmt.Sprintf("more than %d rules", maxIgnoreRules)},
		"costly patterns": {costlyRules, "more matching work than"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := longNamesTree(t, c.rules)
			err := returns(t, func() error { _, err := Write(context.Background(), io.Discard, dir, Options{}); return err })
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), IgnoreFileName) {
				t.Fatalf("%v, want %q about %s", err, c.want, IgnoreFileName)
			}
		})
	}
}

// costlyRules are 200 rules that each cost about 250 steps a byte of the
// names they are tried on, and match none of longNamesTree's.
var costlyRules = strings.Repeat(strings.Repeat("*a", 120)+"/*b\n", 200)

// longNamesTree is a module of 2,000 files in a directory with a
// 200-byte name, with rules as its .terraformignore.
func longNamesTree(t testing.TB, rules string) string {
	t.Helper()
	files := map[string]string{"main.tf": "", IgnoreFileName: rules}
	for i := range 2000 {
		files[fmt.Sprintf("%s/%04d.tf", strings.Repeat("a", 200), i)] = ""
	}
	dir := t.TempDir()
	writeTree(t, dir, files)
	return dir
}

// The matching budget is counted, so its bound is the same on any
// machine: the walk stops at the first rule tried once maxIgnoreWork
// steps are spent, having spent at most one expression run more.
func TestIgnoreMatchingStopsAtItsBudget(t *testing.T) {
	dir := longNamesTree(t, costlyRules)
	w, err := newModuleWalker(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	err = returns(t, w.collect)
	if err == nil || !strings.Contains(err.Error(), "more matching work than") {
		t.Fatalf("%v, want the matching budget named", err)
	}
	var costliest int64
	for _, r := range w.rules.rules {
		costliest = max(costliest, r.cost)
	}
	longest := int64(len(strings.Repeat("a", 200)+"/0000.tf/")) + 1
	oneRun := costliest*longest + longest/8 + 1
	spent := maxIgnoreWork - w.match.left
	t.Logf("spent %d steps of a budget of %d (one run of the costliest rule: %d)", spent, maxIgnoreWork, oneRun)
	if spent > maxIgnoreWork+oneRun {
		t.Errorf("spent %d matching steps, more than the budget (%d) and one run of the costliest rule (%d)", spent, maxIgnoreWork, oneRun)
	}
}

// The shortcuts of rule matching (a slashless pattern compared with the
// last element only, names without the pattern's longest literal never
// given to the expression) decide as the whole expression does.
func TestIgnoreShortcutsAgreeWithTheExpression(t *testing.T) {
	patterns := []string{"*", "*.tf", "foo", "f?o", "*o*", "foo/", "/foo", "foo/*.md", "**/foo", "a**b", "[!x]b",
		"a[!x]b", `\*x`, `x\`, "*/", "**", "**/*.tf", "/a/**/b", "te*st*", "m*.zip", "?"}
	paths := []string{"foo", "a/foo", "foo/bar.md", "a/foo/bar.md", "x.tf", "a/b/x.tf", "a/b", "a/xb", "ab", "*x",
		"a/*x", `x\`, "test", "a/tenst", "m.zip", "mod/m1.zip", "a", "a/b/c/d/b", "o", "a/x/b"}
	for _, p := range patterns {
		rs, err := ParseIgnoreRules(strings.NewReader(p))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		glob := strings.TrimPrefix(p, "/")
		if !strings.HasPrefix(p, "/") {
			glob = "**/" + p
		}
		if strings.HasSuffix(glob, "/") {
			glob += "**"
		}
		whole, _, err := globRegexp(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			for _, dir := range []bool{false, true} {
				want := whole.MatchString(path) || dir && whole.MatchString(path+"/")
				if got, _ := rs.match(path, dir, nil); got != want {
					t.Errorf("pattern %q, path %q (directory %v): matched %v, the expression says %v", p, path, dir, got, want)
				}
			}
		}
	}
}

// Options.Charge is told every byte of Pack's temporary zip before it is
// written, and its error stops the packing, leaving no file behind.
func TestPackChargesItsZip(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, sampleModule)
	var charged int64
	z, err := Pack(context.Background(), dir, Options{TempDir: t.TempDir(), Charge: func(n int64) error { charged += n; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer z.Remove()
	if charged != z.Size {
		t.Errorf("charged %d bytes for a zip of %d", charged, z.Size)
	}
	full := errors.New("disk budget spent")
	temp := t.TempDir()
	charged = 0
	_, err = Pack(context.Background(), dir, Options{TempDir: temp, Charge: func(n int64) error {
		if charged += n; charged > 1000 {
			return full
		}
		return nil
	}})
	if !errors.Is(err, full) {
		t.Fatalf("%v, want the charge's error", err)
	}
	if entries, _ := os.ReadDir(temp); len(entries) != 0 {
		t.Errorf("left %d files behind", len(entries))
	}
}

// BenchmarkIgnoreMatchingBudget is what the matching budget costs in
// time with the costliest rules: ns/step relates maxIgnoreWork to the
// seconds a hostile .terraformignore may take (docs/security.md).
func BenchmarkIgnoreMatchingBudget(b *testing.B) {
	dir := longNamesTree(b, costlyRules)
	for b.Loop() {
		w, err := newModuleWalker(context.Background(), dir)
		if err != nil {
			b.Fatal(err)
		}
		if err := w.collect(); err == nil {
			b.Fatal("the walk did not spend its matching budget")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(maxIgnoreWork), "ns/step")
}
