// Package vulns matches the modules of Go binaries (provider binaries)
// against an offline vulnerability database in OSV format, laid out as
// the Go vulnerability database (golang.org/x/vulndb, vuln.go.dev) is
// served: what `govulncheck -db file://DIR` reads.
//
// Matching is at the module level only: a module is affected when its
// version lies in one of an entry's affected ranges for that module (and,
// with MatchPlatform, when one of the entry's packages is built for the
// binary's platform). There is no symbol reachability: the findings are
// a superset of what govulncheck reports by default (-scan symbol), and
// equal to what it reports with `-scan module` for the same binary and
// database (the package's tests check this against govulncheck itself).
//
// Versions are compared as Go module semver (golang.org/x/mod/semver);
// the standard library is the module "stdlib" (and the go command
// "toolchain"), its version a Go release as go1.22.1 or as semver
// (GoVersionToSemver converts as govulncheck does: go1.21 → v1.21.0,
// go1.22rc1 → v1.22.0-rc.1).
//
// Where this package and govulncheck v1.9.0 read an entry differently,
// the entry is one the Go database never publishes, and this package
// skips it (Open, Skipped) rather than guess: ranges of another type than
// SEMVER, events out of order or overlapping, "limit" events. One
// difference is deliberate: a last_affected event (OSV, unused by the Go
// database) ends its range after that version, where govulncheck ignores
// the event and reads the range as open-ended.
package vulns

import (
	"runtime/debug"
	"sort"
	"strings"
)

// Module is a module in a binary: its path and version. The standard
// library is Stdlib, its version the Go release (go1.22.1) or its semver
// (v1.22.1). For a replaced module, give the replacement's path and
// version: the code the binary holds.
type Module struct {
	Path, Version string
}

// Finding is an entry affecting a module.
type Finding struct {
	ID      string   // the entry, e.g. GO-2022-1059
	Aliases []string // e.g. CVE-2022-32149, GHSA-69ch-w2m2-3vjp
	Summary string
	Module  string // the module's path, as given to Match
	Version string // its version, as given to Match
	// Fixed is the earliest version after Version that fixes the entry
	// and is not itself affected, in semver ("v0.3.8", "v1.22.5" for the
	// standard library); "" when there is none.
	Fixed string
}

// Match returns the entries affecting mods, on any platform; see
// MatchPlatform.
func (db *DB) Match(mods []Module) []Finding {
	return db.MatchPlatform("", "", mods)
}

// MatchPlatform returns the entries affecting mods in a binary built for
// goos and goarch ("" for any): those whose affected ranges for a
// module's path hold its version, leaving out entries withdrawn by now,
// modules without a comparable version ("", "(devel)", not semver), and
// affected modules whose packages are all for other platforms. Findings
// are sorted by module path, version and ID; a module given twice is
// reported once.
func (db *DB) MatchPlatform(goos, goarch string, mods []Module) []Finding {
	now := db.now()
	type key struct{ module, version, id string }
	found := map[key]*Finding{}
	for _, m := range mods {
		v := moduleVersion(m.Path, m.Version)
		if v == "" {
			continue
		}
		// The affected modules of each entry for this module that hold v.
		byEntry := map[*entry][]*affected{}
		var order []*entry
		for _, r := range db.byModule[m.Path] {
			if !r.e.withdrawn.IsZero() && r.e.withdrawn.Before(now) {
				continue
			}
			if !r.a.affects(v) || !r.a.onPlatform(goos, goarch) {
				continue
			}
			if byEntry[r.e] == nil {
				order = append(order, r.e)
			}
			byEntry[r.e] = append(byEntry[r.e], r.a)
		}
		for _, e := range order {
			k := key{m.Path, m.Version, e.id}
			if found[k] != nil {
				continue
			}
			found[k] = &Finding{
				ID:      e.id,
				Aliases: append([]string(nil), e.aliases...),
				Summary: e.summary,
				Module:  m.Path,
				Version: m.Version,
				Fixed:   earliestFix(v, byEntry[e]),
			}
		}
	}
	out := make([]Finding, 0, len(found))
	for _, f := range found {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Module != b.Module {
			return a.Module < b.Module
		}
		if a.Version != b.Version {
			return a.Version < b.Version
		}
		return a.ID < b.ID
	})
	return out
}

// earliestFix is the lowest fixed version above v of the affected modules
// that hold v, among those no range of theirs affects (a fix superseded by
// a reintroduction is none), as govulncheck computes it.
func earliestFix(v string, as []*affected) string {
	var fixes []string
	for _, a := range as {
		for _, f := range a.fixes {
			if compare(v, f) < 0 {
				fixes = append(fixes, f)
			}
		}
	}
	sort.SliceStable(fixes, func(i, j int) bool { return compare(fixes[i], fixes[j]) < 0 })
next:
	for _, f := range fixes {
		for _, a := range as {
			for _, s := range a.spans {
				if s.contains(f) {
					continue next
				}
			}
		}
		return f
	}
	return ""
}

// FromBuildInfo lists the modules of a binary as govulncheck scans them:
// its dependencies (a replaced one as its replacement), its main module,
// and the standard library at the Go release it was built with; and the
// GOOS and GOARCH it was built for ("" when unrecorded), for
// MatchPlatform. Read bi with debug/buildinfo.
func FromBuildInfo(bi *debug.BuildInfo) (mods []Module, goos, goarch string) {
	for _, d := range bi.Deps {
		if d == nil {
			continue
		}
		if d.Replace != nil {
			d = d.Replace
		}
		mods = append(mods, Module{Path: d.Path, Version: d.Version})
	}
	if bi.Main.Path != "" {
		mods = append(mods, Module{Path: bi.Main.Path, Version: bi.Main.Version})
	}
	if bi.GoVersion != "" {
		mods = append(mods, Module{Path: Stdlib, Version: strings.Fields(bi.GoVersion + " ")[0]})
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			if goos == "" {
				goos = s.Value
			}
		case "GOARCH":
			if goarch == "" {
				goarch = s.Value
			}
		}
	}
	return mods, goos, goarch
}
