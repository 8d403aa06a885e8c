package vulns

import (
	"os"
	"path/filepath"
	"strings"
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

// A database is taken whole or not at all: a reload while an entry the
// new index names is half written, or not there yet, keeps the database
// in force (counted and kept as the last error); once the entry is
// whole, the next check takes the new database, the index unchanged;
// an entry rewritten later is seen too.
func TestLiveReloadTakesTheDatabaseWhole(t *testing.T) {
	dir := t.TempDir()
	copyFixtureEntries(t, dir)
	writeIndex(t, dir, fixtureModified, func(module, _ string) bool { return module != "golang.org/x/text" })
	l, err := OpenLive(dir, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	xtext := []Module{{Path: "golang.org/x/text", Version: "v0.3.7"}}
	entry := filepath.Join(dir, "ID", "GO-2022-1059.json")
	whole, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	// An update in progress: the new index is written, its entry is not.
	writeIndex(t, dir, fixtureModified.Add(time.Hour), nil)
	for i, state := range []func(){
		func() { os.WriteFile(entry, whole[:len(whole)/2], 0o644) },
		func() { os.Remove(entry) },
	} {
		state()
		if l.Check() || len(l.Current().Match(xtext)) != 0 {
			t.Fatalf("state %d: a database with an entry of its index missing or half written was put in force", i)
		}
		if st := l.Status(); st.Errors != uint64(i+1) || st.Current || !strings.Contains(st.LastError, "GO-2022-1059") {
			t.Fatalf("state %d: status %+v, want the failure counted and named", i, st)
		}
	}
	if err := os.WriteFile(entry, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	if !l.Check() || len(l.Current().Match(xtext)) == 0 {
		t.Fatal("the entry written whole, the index unchanged: the new database is not in force")
	}
	if st := l.Status(); st.Reloads != 1 || !st.Current || st.LastError != "" {
		t.Fatalf("status after the reload: %+v", st)
	}
	// An entry rewritten, the index unchanged (a database edited by
	// hand): the check sees it.
	if err := os.WriteFile(entry, append(whole, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if !l.Check() || l.Status().Reloads != 2 {
		t.Fatal("an entry rewritten under an unchanged index was not read again")
	}
}

// copyFixtureEntries copies testdata/db/ID into dir/ID.
func copyFixtureEntries(t *testing.T, dir string) {
	t.Helper()
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
}

// A server does not start with a database missing an entry its index
// names: the error names the file.
func TestOpenLiveRefusesADatabaseNotWhole(t *testing.T) {
	dir := t.TempDir()
	copyFixtureEntries(t, dir)
	writeIndex(t, dir, fixtureModified, nil)
	if err := os.Remove(filepath.Join(dir, "ID", "GO-2022-1059.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLive(dir, time.Hour, nil); err == nil || !strings.Contains(err.Error(), "ID/GO-2022-1059.json") {
		t.Fatalf("OpenLive: %v, want an error naming the missing entry", err)
	}
}
