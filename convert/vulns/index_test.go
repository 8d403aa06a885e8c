package vulns

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/semver"
)

var update = flag.Bool("update", false, "rewrite testdata/db/index from testdata/db/ID")

// fixtureModified is the time of the golang.org/x/vulndb snapshot the
// fixture's real entries come from (their own modified times are zero in
// that repository: vuln.go.dev fills them in when it publishes).
var fixtureModified = time.Date(2026, 11, 5, 23, 49, 57, 0, time.UTC)

// indexFiles computes a database's index files from its ID directory, as
// golang.org/x/vulndb publishes them: db.json (the latest modified time,
// or modified if later), modules.json (per module path, sorted, its
// entries sorted by ID, each with its modified time and the fix no range
// reintroduces) and vulns.json (per entry, its aliases and modified time).
// only, when not nil, keeps just the (module, ID) pairs it accepts.
func indexFiles(t testing.TB, dir string, modified time.Time, only func(module, id string) bool) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "ID", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	type vuln struct {
		ID       string    `json:"id"`
		Modified time.Time `json:"modified"`
		Fixed    string    `json:"fixed,omitempty"`
	}
	type module struct {
		Path  string `json:"path"`
		Vulns []vuln `json:"vulns"`
	}
	type summary struct {
		ID       string    `json:"id"`
		Modified time.Time `json:"modified"`
		Aliases  []string  `json:"aliases,omitempty"`
	}
	byPath := map[string]*module{}
	var vulns []summary
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			ID       string    `json:"id"`
			Modified time.Time `json:"modified"`
			Aliases  []string  `json:"aliases"`
			Affected []struct {
				Package struct {
					Name string `json:"name"`
				} `json:"package"`
				Ranges []struct {
					Type   string              `json:"type"`
					Events []map[string]string `json:"events"`
				} `json:"ranges"`
			} `json:"affected"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if e.ID == "" {
			e.ID = strings.TrimSuffix(filepath.Base(f), ".json")
		}
		if e.Modified.After(modified) {
			modified = e.Modified
		}
		vulns = append(vulns, summary{ID: e.ID, Modified: e.Modified, Aliases: e.Aliases})
		for _, a := range e.Affected {
			p := a.Package.Name
			if only != nil && !only(p, e.ID) {
				continue
			}
			// The latest fix, none when a range reintroduces after it.
			fixed := ""
			for _, r := range a.Ranges {
				if r.Type != "SEMVER" {
					continue
				}
				for _, ev := range r.Events {
					if f := ev["fixed"]; f != "" && (fixed == "" || semver.Compare("v"+fixed, "v"+f) < 0) {
						fixed = f
					}
				}
				for _, ev := range r.Events {
					if in := ev["introduced"]; in != "" && in != "0" && fixed != "" && semver.Compare("v"+fixed, "v"+in) < 0 {
						fixed = ""
						break
					}
				}
			}
			if byPath[p] == nil {
				byPath[p] = &module{Path: p, Vulns: []vuln{}}
			}
			byPath[p].Vulns = append(byPath[p].Vulns, vuln{ID: e.ID, Modified: e.Modified, Fixed: fixed})
		}
	}
	var modules []*module
	for _, m := range byPath {
		sort.Slice(m.Vulns, func(i, j int) bool { return m.Vulns[i].ID < m.Vulns[j].ID })
		modules = append(modules, m)
	}
	sort.Slice(modules, func(i, j int) bool { return modules[i].Path < modules[j].Path })
	out := map[string][]byte{}
	for name, v := range map[string]any{
		"db.json":      map[string]time.Time{"modified": modified},
		"modules.json": modules,
		"vulns.json":   vulns,
	} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Join("index", name)] = append(b, '\n')
	}
	return out
}

func writeIndex(t testing.TB, dir string, modified time.Time, only func(module, id string) bool) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "index"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range indexFiles(t, dir, modified, only) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The committed index of the fixture is the one its entries give
// (go test -run TestFixtureIndex -update rewrites it).
func TestFixtureIndex(t *testing.T) {
	dir := filepath.Join("testdata", "db")
	if *update {
		writeIndex(t, dir, fixtureModified, nil)
	}
	for name, want := range indexFiles(t, dir, fixtureModified, nil) {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%v (go test -run TestFixtureIndex -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what testdata/db/ID gives: go test -run TestFixtureIndex -update", name)
		}
	}
}
