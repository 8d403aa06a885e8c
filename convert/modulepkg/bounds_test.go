package modulepkg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// within runs f and returns its error, failing the test when f has not
// returned after limit (f then runs on, in the background, until the test
// binary exits).
func within(t *testing.T, limit time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- f() }()
	select {
	case err := <-done:
		took := time.Since(start).Round(time.Millisecond)
		if took > limit {
			t.Errorf("took %s, more than %s", took, limit)
		}
		t.Logf("returned after %s", took)
		return err
	case <-time.After(limit + 10*time.Second):
		t.Fatalf("still running %s after it should have returned", limit+10*time.Second)
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
// refused within a second, naming the bound, by Pack, Write and HashTree
// alike.
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
		err := within(t, time.Second, f)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d symbolic links", maxWalkLinks)) {
			t.Errorf("%s: %v, want the link bound named", name, err)
		}
	}
}

// Each entry is counted each time the walk meets it: one directory of
// 3,000 files reached through 100 links is 300,000 entries, refused
// within a second (the files are excluded, so the file bound never
// applies).
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
	err := within(t, time.Second, func() error { _, err := Write(context.Background(), io.Discard, dir, Options{}); return err })
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d entries", maxWalkEntries)) {
		t.Fatalf("%v, want the entry bound named", err)
	}
}

// The walk stops when its context ends, with the context's error, even
// within its bounds.
func TestPackModuleWalkStopsWithItsContext(t *testing.T) {
	defer func(l, e int) { maxWalkLinks, maxWalkEntries = l, e }(maxWalkLinks, maxWalkEntries)
	maxWalkLinks, maxWalkEntries = 1<<40, 1<<40
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"main.tf": ""})
	linkFanOut(t, dir, 40)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := within(t, time.Second, func() error { _, err := Write(ctx, io.Discard, dir, Options{}); return err })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want the deadline", err)
	}
}

// .terraformignore is bounded: a file of 1 MiB of rules is refused before
// any rule is tried; rules within the count but costly to match (long
// patterns against long names) stop at the matching budget. Both within
// a second, naming the bound.
func TestPackModuleBoundsIgnoreRules(t *testing.T) {
	files := map[string]string{"main.tf": ""}
	for i := range 2000 {
		files[fmt.Sprintf("%s/%04d.tf", strings.Repeat("a", 200), i)] = ""
	}
	var huge strings.Builder
	for i := 0; huge.Len() < 1<<20; i++ {
		fmt.Fprintf(&huge, "**/n%d*x\n", i)
	}
	costly := strings.Repeat("*a", 120) + "/*b\n"
	for name, c := range map[string]struct {
		rules, want string
	}{
		"1 MiB of rules":  {huge.String(), fmt.Sprintf("larger than %d bytes", maxIgnoreFile)},
		"too many rules":  {strings.Repeat("*.x\n", maxIgnoreRules+1), fmt.Sprintf("more than %d rules", maxIgnoreRules)},
		"costly patterns": {strings.Repeat(costly, 200), "more matching work than"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, files)
			writeTree(t, dir, map[string]string{IgnoreFileName: c.rules})
			err := within(t, time.Second, func() error { _, err := Write(context.Background(), io.Discard, dir, Options{}); return err })
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), IgnoreFileName) {
				t.Fatalf("%v, want %q about %s", err, c.want, IgnoreFileName)
			}
		})
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
