package vulns

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

const (
	netPseudo = "v0.0.0-20211112202133-69e39bad7dc2"
	textV     = "v0.3.7"
)

func openFixture(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join("testdata", "db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SkippedError(); err != nil {
		t.Fatal(err)
	}
	return db
}

// brief is a finding as "ID module version fixed".
func brief(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, strings.Join([]string{f.ID, f.Module, f.Version, f.Fixed}, " "))
	}
	return out
}

func TestGoVersionToSemver(t *testing.T) {
	for in, want := range map[string]string{
		"go1":                           "v1.0.0",
		"go1.0":                         "",
		"go1.21":                        "v1.21.0",
		"go1.21.0":                      "v1.21.0",
		"go1.22.1":                      "v1.22.1",
		"go1.22rc1":                     "v1.22.0-rc.1",
		"go1.19beta2":                   "v1.19.0-beta.2",
		"go1.20-pre4":                   "v1.20.0-pre.4",
		"go1.22.1 X:nocoverageredesign": "v1.22.1",
		"devel go1.27-abcdef":           "",
		"":                              "",
		"1.22.1":                        "",
		"go1.22.1.1":                    "",
	} {
		if got := GoVersionToSemver(in); got != want {
			t.Errorf("GoVersionToSemver(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMatchFixture(t *testing.T) {
	db := openFixture(t)
	if got, want := db.Modified(), fixtureModified; !got.Equal(want) {
		t.Errorf("Modified = %v, want %v", got, want)
	}
	if db.Entries() != 15 {
		t.Errorf("Entries = %d, want 15", db.Entries())
	}
	mods := []Module{
		{"golang.org/x/text", textV},
		{"golang.org/x/net", netPseudo},
		{"example.com/vulnsprobe", "(devel)"},
		{"golang.org/x/crypto", "v0.1.0"}, // not in the database
		{Stdlib, "go1.26.8"},
		{Stdlib, "v1.26.9"},
		{Toolchain, "go1.26.8"},
	}
	want := []string{
		"GO-2022-0288 golang.org/x/net " + netPseudo + " v0.0.0-20211209124913-491a49abca63",
		"GO-2022-1144 golang.org/x/net " + netPseudo + " v0.4.0",
		"GO-2023-1571 golang.org/x/net " + netPseudo + " v0.7.0",
		"GO-2025-3595 golang.org/x/net " + netPseudo + " v0.38.0",
		"GO-2026-6603 golang.org/x/net " + netPseudo + " v0.60.0",
		// The first fix (2022-01-01) is reintroduced by the second range.
		"GO-9999-0004 golang.org/x/net " + netPseudo + " v0.5.0",
		// GO-2021-0113 is fixed in v0.3.7; GO-9999-0003 is withdrawn.
		"GO-2022-1059 golang.org/x/text v0.3.7 v0.3.8",
		"GO-2026-5970 golang.org/x/text v0.3.7 v0.39.0",
		"GO-9999-0002 golang.org/x/text v0.3.7 v0.3.8", // plan9 only: any platform
		// The affected block not holding v0.3.7 does not supersede 0.3.8.
		"GO-9999-0005 golang.org/x/text v0.3.7 v0.3.8",
		"GO-2026-6603 stdlib go1.26.8 v1.26.9",
		"GO-9999-0001 stdlib go1.26.8 ",
		"GO-9999-0001 stdlib v1.26.9 ",
	}
	if got := brief(db.Match(mods)); !reflect.DeepEqual(got, want) {
		t.Errorf("Match:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	f := db.Match([]Module{{"golang.org/x/text", "0.3.7"}})
	if len(f) == 0 || f[0].ID != "GO-2022-1059" || !reflect.DeepEqual(f[0].Aliases, []string{"CVE-2022-32149", "GHSA-69ch-w2m2-3vjp"}) ||
		!strings.HasPrefix(f[0].Summary, "Denial of service via crafted Accept-Language") {
		t.Errorf("x/text 0.3.7: %+v", f)
	}

	// On linux/386: not GO-9999-0002 (plan9), not GO-9999-0005 (its
	// affected package is for amd64 and arm64).
	got := brief(db.MatchPlatform("linux", "386", []Module{{"golang.org/x/text", textV}}))
	want = []string{"GO-2022-1059 golang.org/x/text v0.3.7 v0.3.8", "GO-2026-5970 golang.org/x/text v0.3.7 v0.39.0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MatchPlatform(linux, 386): %q, want %q", got, want)
	}

	// Before its withdrawal, GO-9999-0003 matched.
	db.now = func() time.Time { return time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC) }
	if got := brief(db.Match([]Module{{"golang.org/x/text", "v0.20.0"}})); !reflect.DeepEqual(got, []string{
		"GO-2026-5970 golang.org/x/text v0.20.0 v0.39.0", "GO-9999-0003 golang.org/x/text v0.20.0 ",
	}) {
		t.Errorf("before the withdrawal: %q", got)
	}
}

func TestRangeEdges(t *testing.T) {
	e, err := parseEntry([]byte(`{"id":"X-1","affected":[{"package":{"name":"m","ecosystem":"Go"},"ranges":[
		{"type":"SEMVER","events":[{"fixed":"1.2.0"},{"introduced":"1.0.0"},{"introduced":"2.0.0-0"},{"last_affected":"2.1.0"}]},
		{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"0.5.0"}]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	a := &e.affected[0]
	for v, want := range map[string]bool{
		"v0.0.0": true, "v0.4.9": true, "v0.5.0": false, "v0.9.0": false, "v1.0.0-rc.1": false, "v1.0.0": true,
		"v1.1.9": true, "v1.2.0": false, "v2.0.0-alpha": true, "v2.0.0": true, "v2.1.0": true, "v2.1.0+meta": true, "v2.1.1": false,
	} {
		if got := a.affects(v); got != want {
			t.Errorf("affects(%s) = %v, want %v", v, got, want)
		}
	}
	if got := earliestFix("v0.1.0", []*affected{a}); got != "v0.5.0" {
		t.Errorf("earliestFix(v0.1.0) = %q", got)
	}
	if got := earliestFix("v2.0.0", []*affected{a}); got != "" {
		t.Errorf("earliestFix(v2.0.0) = %q, want none", got)
	}
}

// Only the (module, entry) pairs the index lists are matched, as
// govulncheck looks entries up; an entry the index does not name is not
// read.
func TestIndexDecides(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "db", "ID"), filepath.Join(dir, "ID"))
	writeIndex(t, dir, fixtureModified, func(module, id string) bool { return id != "GO-2022-1059" })
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range db.Match([]Module{{"golang.org/x/text", textV}}) {
		if f.ID == "GO-2022-1059" {
			t.Errorf("GO-2022-1059 matched though the index does not list it")
		}
	}
	if db.Entries() != 14 {
		t.Errorf("Entries = %d, want 14", db.Entries())
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// A database whose index is hostile or broken is refused, the file named.
func TestOpenErrors(t *testing.T) {
	good := func(t *testing.T) string {
		dir := t.TempDir()
		copyDir(t, filepath.Join("testdata", "db"), dir)
		return dir
	}
	for name, tc := range map[string]struct {
		file, content string
		want          string
	}{
		"no db.json":          {"index/db.json", "", "index/db.json"},
		"db.json not JSON":    {"index/db.json", "{", "index/db.json"},
		"db.json no modified": {"index/db.json", `{"modified":"0001-01-01T00:00:00Z"}`, "no modified time"},
		"modules not a list":  {"index/modules.json", `{"path":"x"}`, "index/modules.json"},
		"modules wrong type":  {"index/modules.json", `[{"path":"x","vulns":[{"id":7}]}]`, "index/modules.json"},
		"ID escapes":          {"index/modules.json", `[{"path":"x","vulns":[{"id":"../../etc/passwd"}]}]`, "is not an identifier"},
		"ID with slash":       {"index/modules.json", `[{"path":"x","vulns":[{"id":"a/b"}]}]`, "is not an identifier"},
		"module without path": {"index/modules.json", `[{"vulns":[]}]`, "no path"},
		"modules too large":   {"index/modules.json", "[" + strings.Repeat(" ", MaxModulesJSONBytes) + "]", "larger than"},
		"modules a directory": {"index/modules.json", "<dir>", "a directory"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := good(t)
			p := filepath.Join(dir, tc.file)
			os.Remove(p)
			switch tc.content {
			case "":
			case "<dir>":
				os.Mkdir(p, 0o755)
			default:
				if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Open(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want an error with %q", err, tc.want)
			}
			if _, ferr := Fingerprint(dir); tc.file == "index/modules.json" && tc.content != "<dir>" && !strings.Contains(name, "too large") && ferr != nil {
				t.Errorf("Fingerprint: %v", ferr)
			}
		})
	}
}

// hostileDir is a database of the good fixture entries and the hostile
// ones (testdata/hostile, plus those too large to commit), all listed
// under the module example.com/hostile and golang.org/x/text.
func hostileDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "db", "ID"), filepath.Join(dir, "ID"))
	copyDir(t, filepath.Join("testdata", "hostile"), filepath.Join(dir, "ID"))
	os.Remove(filepath.Join(dir, "ID", "README.md"))
	generated := map[string]string{
		// Over MaxEntryBytes.
		"H-huge": `{"id":"H-huge","summary":"` + strings.Repeat("a", MaxEntryBytes) + `"}`,
		// Deep nesting, under the size bound.
		"H-deep":        `{"id":"H-deep","affected":` + strings.Repeat("[", 400_000) + strings.Repeat("]", 400_000) + `}`,
		"H-deep-object": `{"id":"H-deep-object","x":` + strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000) + `}`,
		// Too many events, ranges, affected modules, aliases.
		"H-many-events":   manyEvents("H-many-events", MaxEvents+2),
		"H-many-affected": `{"id":"H-many-affected","affected":[` + strings.TrimSuffix(strings.Repeat(`{"package":{"name":"golang.org/x/text","ecosystem":"Go"}},`, MaxAffected+1), ",") + `]}`,
		"H-many-aliases":  `{"id":"H-many-aliases","aliases":[` + strings.TrimSuffix(strings.Repeat(`"CVE-1",`, MaxAliases+1), ",") + `]}`,
		"H-many-ranges": `{"id":"H-many-ranges","affected":[{"package":{"name":"golang.org/x/text","ecosystem":"Go"},"ranges":[` +
			strings.TrimSuffix(strings.Repeat(`{"type":"SEMVER","events":[{"introduced":"0"}]},`, MaxRanges+1), ",") + `]}]}`,
		"H-many-packages": `{"id":"H-many-packages","affected":[{"package":{"name":"golang.org/x/text","ecosystem":"Go"},"ecosystem_specific":{"imports":[` +
			strings.TrimSuffix(strings.Repeat(`{"path":"p"},`, MaxPackages+1), ",") + `]}}]}`,
	}
	for id, content := range generated {
		if err := os.WriteFile(filepath.Join(dir, "ID", id+".json"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The index lists every file by its name, under both modules; the
	// entries themselves cannot be trusted to say which.
	var ids []string
	files, _ := filepath.Glob(filepath.Join(dir, "ID", "*.json"))
	for _, f := range files {
		ids = append(ids, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	ids = append(ids, "H-missing")
	var vulns []map[string]string
	for _, id := range ids {
		vulns = append(vulns, map[string]string{"id": id})
	}
	modules, _ := json.Marshal([]map[string]any{
		{"path": "example.com/hostile", "vulns": vulns},
		{"path": "golang.org/x/text", "vulns": vulns},
	})
	os.MkdirAll(filepath.Join(dir, "index"), 0o755)
	os.WriteFile(filepath.Join(dir, "index", "modules.json"), modules, 0o644)
	os.WriteFile(filepath.Join(dir, "index", "db.json"), []byte(`{"modified":"2026-11-05T23:49:57Z"}`), 0o644)
	return dir
}

func manyEvents(id string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"id":%q,"affected":[{"package":{"name":"golang.org/x/text","ecosystem":"Go"},"ranges":[{"type":"SEMVER","events":[`, id)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		if i%2 == 0 {
			fmt.Fprintf(&b, `{"introduced":"1.%d.0"}`, i)
		} else {
			fmt.Fprintf(&b, `{"fixed":"1.%d.0"}`, i)
		}
	}
	b.WriteString(`]}]}]}`)
	return b.String()
}

// Hostile entries are skipped, each named with its reason; the others
// still match.
func TestHostileEntries(t *testing.T) {
	dir := hostileDir(t)
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"H-huge":                "larger than 1048576 bytes",
		"H-deep":                "not an OSV entry",
		"H-deep-object":         "not an OSV entry",
		"H-many-events":         "258 events, more than 256",
		"H-many-affected":       "257 affected modules",
		"H-many-aliases":        "65 aliases",
		"H-many-ranges":         "33 ranges",
		"H-many-packages":       "1025 packages",
		"H-missing":             "no such file",
		"H-fixed-first":         "fixed at v0.1.0 is not preceded by an introduced event",
		"H-fixed-equal":         "two events at version",
		"H-two-introduced":      "follows introduced at",
		"H-not-semver":          `"1.0" is not a semantic version`,
		"H-not-semver-fixed":    `"latest" is not a semantic version`,
		"H-zero-fixed":          `"0" is not a semantic version`,
		"H-git-range":           `range type "GIT": only SEMVER`,
		"H-ecosystem-range":     `range type "ECOSYSTEM"`,
		"H-no-type":             `range type ""`,
		"H-limit":               "limit events are not supported",
		"H-two-fields":          "sets 2 of introduced",
		"H-empty-event":         "sets 0 of introduced",
		"H-no-events":           "no events",
		"H-affected-string":     "not an OSV entry",
		"H-events-object":       "not an OSV entry",
		"H-version-number":      "not an OSV entry",
		"H-id-mismatch":         `holds entry "GO-2022-1059"`,
		"H-bad-alias":           "alias",
		"H-trailing":            "data after the JSON object",
		"H-not-json":            "not an OSV entry",
		"H-no-ecosystem":        "no ecosystem",
		"H-empty-module":        "module path",
		"H-null":                "is not an identifier",
		"H-array":               "not an OSV entry",
		"H-long-version":        "version of",
		"H-goos-many":           "GOOS or GOARCH",
		"H-withdrawn-not-time":  "not an OSV entry",
		"H-introduced-negative": "is not a semantic version",
	}
	got := map[string]string{}
	for _, s := range db.Skipped() {
		got[strings.TrimSuffix(strings.TrimPrefix(s.File, "ID/"), ".json")] = s.Reason
	}
	for id, reason := range want {
		if !strings.Contains(got[id], reason) {
			t.Errorf("%s: skipped for %q, want a reason with %q", id, got[id], reason)
		}
	}
	for id, reason := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("%s skipped unexpectedly: %s", id, reason)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "ID", "H-control-summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := parseEntry(b); err != nil {
		t.Error(err)
	} else if e.summary != "clear the screen  [2J" {
		t.Errorf("a summary with an escape sequence: %q", e.summary)
	}
	if err := db.SkippedError(); err == nil || !strings.Contains(err.Error(), "ID/H-huge.json") {
		t.Errorf("SkippedError: %v", err)
	}
	// The hostile entries that are well formed (H-ok-*) and the good ones
	// still match.
	var ids []string
	for _, f := range db.Match([]Module{{"golang.org/x/text", textV}, {"example.com/hostile", "v1.0.0"}}) {
		ids = append(ids, f.Module+" "+f.ID)
	}
	wantIDs := []string{
		"example.com/hostile H-ok-other-ecosystem",
		"golang.org/x/text GO-2022-1059", "golang.org/x/text GO-2026-5970", "golang.org/x/text GO-9999-0002", "golang.org/x/text GO-9999-0005",
		"golang.org/x/text H-ok-no-ranges",
	}
	if !reflect.DeepEqual(ids, wantIDs) {
		t.Errorf("matched %q, want %q", ids, wantIDs)
	}
}

// The reference: govulncheck -mode binary -scan module, on a program
// linking golang.org/x/text v0.3.7 and an old golang.org/x/net, against
// the fixture database, finds the (entry, module) pairs MatchPlatform
// finds for the binary's modules (FromBuildInfo); with its fixed versions.
func TestAgreesWithGovulncheck(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "vulnsprobe")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("testdata", "probe")
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, out)
	}
	dbDir, err := filepath.Abs(filepath.Join("testdata", "db"))
	if err != nil {
		t.Fatal(err)
	}
	theirs := map[string]bool{}
	for _, f := range testenv.Govulncheck(t, dbDir, bin) {
		if len(f.Trace) != 1 {
			t.Fatalf("a module-level finding with %d frames: %+v", len(f.Trace), f)
		}
		theirs[f.OSV+" "+f.Trace[0].Module+" "+f.FixedVersion] = true
	}

	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	mods, goos, goarch := FromBuildInfo(bi)
	if goos == "" || goarch == "" {
		t.Fatalf("no GOOS or GOARCH in the build information: %q %q", goos, goarch)
	}
	ours := map[string]bool{}
	for _, f := range openFixture(t).MatchPlatform(goos, goarch, mods) {
		ours[f.ID+" "+f.Module+" "+f.Fixed] = true
	}
	if !reflect.DeepEqual(ours, theirs) {
		t.Errorf("findings (entry module fixed):\nours:\n%s\ngovulncheck's:\n%s", keys(ours), keys(theirs))
	}
	// The probe links both modules with vulnerabilities and the standard
	// library's constructed entry.
	for _, want := range []string{"GO-2022-1059 golang.org/x/text v0.3.8", "GO-2022-0288 golang.org/x/net v0.0.0-20211209124913-491a49abca63", "GO-9999-0001 stdlib "} {
		if !theirs[want] {
			t.Errorf("govulncheck did not find %q: the fixture or the probe changed", want)
		}
	}
}

func keys(m map[string]bool) string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return strings.Join(k, "\n")
}
