package vulns

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/semver"
)

// Bounds of one entry (an ID/<id>.json file). The public Go vulnerability
// database stays far inside them: in November 2026 its largest entry was
// 32 KiB, with at most 22 affected modules, 23 packages per module, one
// range per module, 12 events per range, 8 aliases and a 270-byte summary.
const (
	MaxEntryBytes     = 1 << 20 // an entry file
	MaxAffected       = 256     // affected modules of an entry
	MaxRanges         = 32      // ranges of an affected module
	MaxEvents         = 256     // events of a range
	MaxPackages       = 1024    // packages ("imports") of an affected module
	MaxPlatforms      = 64      // GOOS (or GOARCH) values of a package
	MaxAliases        = 64      // aliases of an entry
	MaxSummaryBytes   = 1024    // an entry's summary
	maxIDBytes        = 64      // an entry's ID or an alias
	maxModuleBytes    = 512     // a module path
	maxVersionBytes   = 256     // a version in an event
	maxPlatformBytes  = 32      // a GOOS or GOARCH value
	rangeTypeSemver   = "SEMVER"
	goEcosystem       = "Go"
	introducedAtStart = "0"
)

// validID is what an entry ID and an alias may be: the Go database's
// GO-YYYY-NNNN, CVE-…, GHSA-… and the like. An ID names the entry's file,
// so it never holds a path separator.
var validID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)

// entry is what matching needs of an OSV entry, validated.
type entry struct {
	id        string
	aliases   []string
	summary   string
	withdrawn time.Time // zero: not withdrawn
	affected  []affected
}

// affected is one affected module of an entry.
type affected struct {
	module string
	// every: no ranges, so every version is affected (as govulncheck
	// reads an entry without ranges).
	every bool
	// spans are the affected version intervals of all the module's
	// ranges; fixes the versions of their fixed events, sorted.
	spans []span
	fixes []string
	// platforms are the module's packages' GOOS and GOARCH lists; no
	// packages: every platform.
	platforms []platform
}

// span is an interval of affected versions: from lo (included; "" from
// the beginning) to hi (excluded, or included when last; "" no end).
type span struct {
	lo, hi string
	last   bool
}

type platform struct {
	goos, goarch []string
}

// The OSV form, as far as it is read. Fields absent here (details,
// references, credits, symbols, …) are skipped by the decoder.
type rawEntry struct {
	ID        string        `json:"id"`
	Withdrawn *time.Time    `json:"withdrawn"`
	Aliases   []string      `json:"aliases"`
	Summary   string        `json:"summary"`
	Affected  []rawAffected `json:"affected"`
}

type rawAffected struct {
	Package struct {
		Name      string `json:"name"`
		Ecosystem string `json:"ecosystem"`
	} `json:"package"`
	Ranges            []rawRange `json:"ranges"`
	EcosystemSpecific struct {
		Imports []rawImport `json:"imports"`
	} `json:"ecosystem_specific"`
}

type rawRange struct {
	Type   string     `json:"type"`
	Events []rawEvent `json:"events"`
}

type rawEvent struct {
	Introduced   *string `json:"introduced"`
	Fixed        *string `json:"fixed"`
	LastAffected *string `json:"last_affected"`
	Limit        *string `json:"limit"`
}

type rawImport struct {
	Path   string   `json:"path"`
	GOOS   []string `json:"goos"`
	GOARCH []string `json:"goarch"`
}

// parseEntry reads and validates one OSV entry. Anything outside the
// bounds, of the wrong JSON type, or with a range that is not a
// well-formed SEMVER range is an error: the entry is then not used at all
// (a range dropped alone could turn "some versions" into "every version",
// or the reverse).
func parseEntry(b []byte) (*entry, error) {
	if len(b) > MaxEntryBytes {
		return nil, fmt.Errorf("%d bytes, more than %d", len(b), MaxEntryBytes)
	}
	var r rawEntry
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("not an OSV entry: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not an OSV entry: data after the JSON object")
	}
	if err := checkID("id", r.ID); err != nil {
		return nil, err
	}
	e := &entry{id: r.ID, summary: r.Summary}
	if r.Withdrawn != nil {
		e.withdrawn = *r.Withdrawn
		if e.withdrawn.IsZero() {
			// 0001-01-01: withdrawn since the beginning of time.
			e.withdrawn = time.Unix(0, 0)
		}
	}
	if len(r.Aliases) > MaxAliases {
		return nil, fmt.Errorf("%d aliases, more than %d", len(r.Aliases), MaxAliases)
	}
	for _, a := range r.Aliases {
		if err := checkID("alias", a); err != nil {
			return nil, err
		}
	}
	e.aliases = r.Aliases
	if len(r.Summary) > MaxSummaryBytes {
		return nil, fmt.Errorf("summary of %d bytes, more than %d", len(r.Summary), MaxSummaryBytes)
	}
	// A summary is for display: control characters (a line break in a
	// public entry, an escape sequence in a hostile one) become spaces.
	e.summary = strings.Map(func(c rune) rune {
		if c == utf8.RuneError || unicode.IsControl(c) {
			return ' '
		}
		return c
	}, r.Summary)
	if len(r.Affected) > MaxAffected {
		return nil, fmt.Errorf("%d affected modules, more than %d", len(r.Affected), MaxAffected)
	}
	for i, ra := range r.Affected {
		a, err := parseAffected(ra)
		if err != nil {
			return nil, fmt.Errorf("affected[%d] (%.100q): %w", i, ra.Package.Name, err)
		}
		if a != nil {
			e.affected = append(e.affected, *a)
		}
	}
	return e, nil
}

func checkID(what, s string) error {
	if len(s) == 0 || len(s) > maxIDBytes || !validID.MatchString(s) {
		return fmt.Errorf("%s %.100q is not an identifier ([A-Za-z0-9._:-], at most %d bytes)", what, s, maxIDBytes)
	}
	return nil
}

func printable(s string) bool {
	for _, c := range s {
		if c == utf8.RuneError || unicode.IsControl(c) {
			return false
		}
	}
	return true
}

// parseAffected validates one affected module; nil, nil for a package of
// another ecosystem, which no Go module can match.
func parseAffected(ra rawAffected) (*affected, error) {
	if ra.Package.Ecosystem != goEcosystem {
		if ra.Package.Ecosystem == "" {
			return nil, errors.New("no ecosystem")
		}
		return nil, nil
	}
	name := ra.Package.Name
	if name == "" || len(name) > maxModuleBytes || !printable(name) {
		return nil, fmt.Errorf("module path %.100q is empty, longer than %d bytes or not printable", name, maxModuleBytes)
	}
	a := &affected{module: name}
	if len(ra.Ranges) > MaxRanges {
		return nil, fmt.Errorf("%d ranges, more than %d", len(ra.Ranges), MaxRanges)
	}
	if len(ra.Ranges) == 0 {
		a.every = true
	}
	for i, rr := range ra.Ranges {
		spans, fixes, err := parseRange(rr)
		if err != nil {
			return nil, fmt.Errorf("range %d: %w", i, err)
		}
		a.spans = append(a.spans, spans...)
		a.fixes = append(a.fixes, fixes...)
	}
	sort.Slice(a.fixes, func(i, j int) bool { return semver.Compare(a.fixes[i], a.fixes[j]) < 0 })
	imports := ra.EcosystemSpecific.Imports
	if len(imports) > MaxPackages {
		return nil, fmt.Errorf("%d packages, more than %d", len(imports), MaxPackages)
	}
	for _, im := range imports {
		if len(im.GOOS) > MaxPlatforms || len(im.GOARCH) > MaxPlatforms {
			return nil, fmt.Errorf("package %.100q: more than %d GOOS or GOARCH values", im.Path, MaxPlatforms)
		}
		for _, p := range append(append([]string(nil), im.GOOS...), im.GOARCH...) {
			if p == "" || len(p) > maxPlatformBytes || !printable(p) {
				return nil, fmt.Errorf("package %.100q: GOOS or GOARCH %.50q", im.Path, p)
			}
		}
		a.platforms = append(a.platforms, platform{goos: im.GOOS, goarch: im.GOARCH})
	}
	return a, nil
}

// event is one range event, its version canonical ("" for introduced "0").
type event struct {
	kind    byte // 'i' introduced, 'f' fixed, 'l' last_affected
	version string
}

// parseRange reads a SEMVER range into the intervals it affects. Its
// events, in version order, must alternate: introduced, then fixed or
// last_affected, then introduced …, at strictly increasing versions (the
// public database's ranges all do). A fixed at or before its introduced,
// two introduced in a row, a limit event (unsupported), a version that is
// not semver, or an event setting none or several of the fields is an
// error; so is a range of another type (the Go database uses SEMVER only;
// govulncheck would read a module with only other ranges as affected in
// every version).
func parseRange(rr rawRange) ([]span, []string, error) {
	if rr.Type != rangeTypeSemver {
		return nil, nil, fmt.Errorf("range type %.50q: only SEMVER is supported", rr.Type)
	}
	if len(rr.Events) == 0 {
		return nil, nil, errors.New("no events")
	}
	if len(rr.Events) > MaxEvents {
		return nil, nil, fmt.Errorf("%d events, more than %d", len(rr.Events), MaxEvents)
	}
	events := make([]event, 0, len(rr.Events))
	for i, re := range rr.Events {
		var ev event
		n := 0
		var raw string
		if re.Introduced != nil {
			n, ev.kind, raw = n+1, 'i', *re.Introduced
		}
		if re.Fixed != nil {
			n, ev.kind, raw = n+1, 'f', *re.Fixed
		}
		if re.LastAffected != nil {
			n, ev.kind, raw = n+1, 'l', *re.LastAffected
		}
		if re.Limit != nil {
			return nil, nil, fmt.Errorf("event %d: limit events are not supported", i)
		}
		if n != 1 {
			return nil, nil, fmt.Errorf("event %d sets %d of introduced, fixed and last_affected, not one", i, n)
		}
		if len(raw) > maxVersionBytes {
			return nil, nil, fmt.Errorf("event %d: version of %d bytes", i, len(raw))
		}
		if !(ev.kind == 'i' && raw == introducedAtStart) {
			if ev.version = canonical(raw); ev.version == "" {
				return nil, nil, fmt.Errorf("event %d: %.100q is not a semantic version", i, raw)
			}
		}
		events = append(events, ev)
	}
	// "0" first, then by version; a tie is an error below.
	sort.SliceStable(events, func(i, j int) bool {
		if events[i].version == "" || events[j].version == "" {
			return events[i].version == "" && events[j].version != ""
		}
		return semver.Compare(events[i].version, events[j].version) < 0
	})
	var spans []span
	var fixes []string
	for i, ev := range events {
		if i > 0 && events[i-1].version == ev.version {
			return nil, nil, fmt.Errorf("two events at version %q", displayVersion(ev.version))
		}
		wantIntroduced := i%2 == 0
		if wantIntroduced != (ev.kind == 'i') {
			if wantIntroduced {
				return nil, nil, fmt.Errorf("%s at %s is not preceded by an introduced event", kindName(ev.kind), displayVersion(ev.version))
			}
			return nil, nil, fmt.Errorf("introduced at %s follows introduced at %s with no fix between", displayVersion(ev.version), displayVersion(events[i-1].version))
		}
		if ev.kind == 'i' {
			spans = append(spans, span{lo: ev.version})
			continue
		}
		s := &spans[len(spans)-1]
		s.hi, s.last = ev.version, ev.kind == 'l'
		if ev.kind == 'f' {
			fixes = append(fixes, ev.version)
		}
	}
	return spans, fixes, nil
}

func kindName(k byte) string {
	if k == 'f' {
		return "fixed"
	}
	return "last_affected"
}

func displayVersion(v string) string {
	if v == "" {
		return introducedAtStart
	}
	return v
}

// contains reports whether the canonical version v lies in s.
func (s span) contains(v string) bool {
	if s.lo != "" && semver.Compare(v, s.lo) < 0 {
		return false
	}
	if s.hi == "" {
		return true
	}
	c := semver.Compare(v, s.hi)
	return c < 0 || (s.last && c == 0)
}

// affects reports whether the canonical version v is affected.
func (a *affected) affects(v string) bool {
	if a.every {
		return true
	}
	for _, s := range a.spans {
		if s.contains(v) {
			return true
		}
	}
	return false
}

// onPlatform reports whether one of a's packages is built for goos and
// goarch ("" matches every value; no packages: every platform), as
// govulncheck filters.
func (a *affected) onPlatform(goos, goarch string) bool {
	if len(a.platforms) == 0 {
		return true
	}
	for _, p := range a.platforms {
		if matchesPlatform(goos, p.goos) && matchesPlatform(goarch, p.goarch) {
			return true
		}
	}
	return false
}

func matchesPlatform(s string, list []string) bool {
	if s == "" || len(list) == 0 {
		return true
	}
	for _, p := range list {
		if p == s {
			return true
		}
	}
	return false
}
