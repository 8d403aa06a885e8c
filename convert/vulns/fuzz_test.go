package vulns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseEntry: no entry panics or escapes the bounds; an entry that
// parses answers consistently: a fix it reports for a version lies above
// it and is not affected itself.
func FuzzParseEntry(f *testing.F) {
	for _, dir := range []string{filepath.Join("testdata", "db", "ID"), filepath.Join("testdata", "hostile")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":"D","affected":` + strings.Repeat("[", 10000) + `}`))
	f.Add([]byte(manyEvents("E", 40)))
	f.Add([]byte(`{"id":"R","affected":[{"package":{"name":"m","ecosystem":"Go"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.0.0"},{"introduced":"1.0.0-rc.1"},{"last_affected":"1.1.0+x"}]}]}]}`))
	f.Add([]byte(`{"id":"W","withdrawn":"0001-01-01T00:00:00Z","aliases":["A:1"],"affected":[{"package":{"name":"stdlib","ecosystem":"Go"},"ranges":[{"type":"SEMVER","events":[{"introduced":"1.21.0-0"},{"fixed":"go1.21.5"}]}]}]}`))
	versions := []string{"v0.0.0", "v0.0.0-20211112202133-69e39bad7dc2", "v0.3.7", "v1.0.0", "v1.0.0-rc.1", "v1.21.4", "v1.21.5", "v2.0.0"}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := parseEntry(b)
		if err != nil {
			if e != nil {
				t.Fatal("an entry and an error")
			}
			return
		}
		if len(e.affected) > MaxAffected || len(e.aliases) > MaxAliases || len(e.summary) > 3*MaxSummaryBytes {
			t.Fatalf("bounds: %d affected, %d aliases, %d bytes of summary", len(e.affected), len(e.aliases), len(e.summary))
		}
		if err := checkID("id", e.id); err != nil {
			t.Fatal(err)
		}
		for i := range e.affected {
			a := &e.affected[i]
			if len(a.spans) > MaxRanges*MaxEvents {
				t.Fatalf("%d spans", len(a.spans))
			}
			for _, v := range versions {
				if !a.affects(v) {
					continue
				}
				fix := earliestFix(v, []*affected{a})
				if fix == "" {
					continue
				}
				if compare(fix, v) <= 0 || a.affects(fix) {
					t.Fatalf("%s: fix %s is not above it or is affected", v, fix)
				}
			}
		}
	})
}
