package vulnscan

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Report is what `oci-tofu vulns` prints (--json: as it is): the
// database, each repository scanned, and the totals.
type Report struct {
	Database     Database      `json:"database"`
	Repositories []*Repository `json:"repositories"`
	Totals       Totals        `json:"totals"`
}

// Database says which vulnerability database a report matched against.
type Database struct {
	Dir         string    `json:"dir"`
	Modified    time.Time `json:"modified"`
	Entries     int       `json:"entries"`
	Fingerprint string    `json:"fingerprint"`
	Skipped     []string  `json:"skipped,omitempty"`
}

// Totals sum up a report.
type Totals struct {
	Versions          int `json:"versions"`
	Platforms         int `json:"platforms"`
	AffectedVersions  int `json:"affected_versions"`
	AffectedPlatforms int `json:"affected_platforms"`
	WithoutSBOM       int `json:"platforms_without_sbom"`
}

// Exit statuses of `vulns --exit-code`: affected versions found (as
// govulncheck's text output exits when it finds any), or none found but
// some platform not covered (no readable SBOM).
const (
	ExitAffected    = 3
	ExitWithoutSBOM = 4
)

// ExitStatus is the status `vulns --exit-code` exits with for t, and
// why: 0 when nothing is affected and every platform has an SBOM.
func (t Totals) ExitStatus() (status int, why string) {
	switch {
	case t.AffectedVersions > 0:
		return ExitAffected, names.Plural(t.AffectedVersions, "version") + " affected"
	case t.WithoutSBOM > 0:
		return ExitWithoutSBOM, names.Plural(t.WithoutSBOM, "platform") + " without an SBOM"
	}
	return 0, ""
}

// NewReport is an empty report on db, read from dir.
func NewReport(dir string, db *vulns.DB) *Report {
	r := &Report{Database: Database{Dir: dir, Modified: db.Modified(), Entries: db.Entries(), Fingerprint: db.Fingerprint()}}
	for _, s := range db.Skipped() {
		r.Database.Skipped = append(r.Database.Skipped, s.String())
	}
	return r
}

// Add adds a scanned repository to the report and its totals. A version
// that could not be read counts as a version, not its platforms.
func (r *Report) Add(repo *Repository) {
	r.Repositories = append(r.Repositories, repo)
	for _, v := range repo.Versions {
		r.Totals.Versions++
		if v.Affected() {
			r.Totals.AffectedVersions++
		}
		if v.Error != "" {
			continue
		}
		for _, p := range v.Platforms {
			r.Totals.Platforms++
			switch {
			case !p.SBOM:
				r.Totals.WithoutSBOM++
			case len(p.Findings) > 0:
				r.Totals.AffectedPlatforms++
			}
		}
	}
}

// Text is the report for people: each repository's affected platforms
// (one line per finding), those without an SBOM and, with all, every
// other platform; then the totals.
func (r *Report) Text(all bool) string {
	var b strings.Builder
	if n := len(r.Database.Skipped); n > 0 {
		fmt.Fprintf(&b, "warning: the database skipped %s (first: %s)\n", names.Plural(n, "entry file"), r.Database.Skipped[0])
	}
	for _, repo := range r.Repositories {
		fmt.Fprintf(&b, "%s\n", repo.Repository)
		shown := 0
		for _, v := range repo.Versions {
			shown += writeVersion(&b, v, all)
		}
		if shown == 0 {
			b.WriteString("  (no known vulnerability, every platform has an SBOM)\n")
		}
	}
	t := r.Totals
	fmt.Fprintf(&b, "total: %s with %s scanned: %s affected (%s), %s without an SBOM (database of %s, %s)",
		names.Plural(t.Versions, "version"), names.Plural(t.Platforms, "platform"), names.Plural(t.AffectedVersions, "version"),
		names.Plural(t.AffectedPlatforms, "platform"), names.Plural(t.WithoutSBOM, "platform"), r.Database.Modified.UTC().Format(time.DateOnly), strconv.Itoa(r.Database.Entries)+" entries")
	return b.String()
}

// writeVersion writes a version's lines, and returns how many of its
// platforms (or whether the version itself) it listed.
func writeVersion(b *strings.Builder, v Version, all bool) int {
	if v.Error != "" {
		fmt.Fprintf(b, "  %-16s not scanned: %s\n", v.Version, v.Error)
		return 1
	}
	shown := 0
	for _, p := range v.Platforms {
		switch {
		case !p.SBOM:
			why := "no SBOM"
			if p.Error != "" {
				why = "no readable SBOM: " + p.Error
			}
			fmt.Fprintf(b, "  %-16s %-16s %s\n", v.Version, p.Platform, why)
		case len(p.Findings) > 0:
			for _, f := range Findings(p.Findings) { // one line each
				fmt.Fprintf(b, "  %-16s %-16s %s\n", v.Version, p.Platform, policy.DescribeFindings([]vulns.Finding{f}))
			}
		case all:
			fmt.Fprintf(b, "  %-16s %-16s no known vulnerability (%s, %s)\n", v.Version, p.Platform, p.GoVersion, names.Plural(p.Modules, "module"))
		default:
			continue
		}
		shown++
	}
	return shown
}
