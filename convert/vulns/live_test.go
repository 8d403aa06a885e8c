package vulns

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Live opens its directory again when the index changes, and counts the
// databases it put in force: Generation, what the proxy keys its
// documents by, moves with each one, not with a check that finds
// nothing new.
func TestLiveGeneration(t *testing.T) {
	if (*Live)(nil).Generation() != 0 || (*Live)(nil).Current() != nil {
		t.Fatal("a nil Live has a database")
	}
	dir := t.TempDir()
	entries, err := filepath.Glob(filepath.Join("testdata", "db", "ID", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "ID"), 0o755)
	for _, e := range entries {
		b, err := os.ReadFile(e)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "ID", filepath.Base(e)), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	withoutXText := func(module, _ string) bool { return module != "golang.org/x/text" }
	writeIndex(t, dir, fixtureModified, withoutXText)
	l, err := OpenLive(dir, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	xtext := []Module{{Path: "golang.org/x/text", Version: "v0.3.7"}}
	if g := l.Generation(); g != 0 || len(l.Current().Match(xtext)) != 0 {
		t.Fatalf("generation %d, x/text findings %v before the change", g, l.Current().Match(xtext))
	}
	if l.Check() || l.Generation() != 0 {
		t.Fatal("a check of an unchanged directory reloaded it")
	}
	writeIndex(t, dir, fixtureModified.Add(time.Hour), nil)
	if !l.Check() || l.Generation() != 1 || l.Reloads() != 1 || len(l.Current().Match(xtext)) == 0 {
		t.Fatalf("after the index changed: generation %d, x/text findings %v", l.Generation(), l.Current().Match(xtext))
	}
	if l.Check() || l.Generation() != 1 {
		t.Fatal("a second check reloaded it again")
	}
}
