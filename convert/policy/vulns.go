package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// A provider rule's vulnerabilities block: what to do with a version
// whose stored SBOMs (convert/sbom, one per platform) list a module, or
// a Go standard library, that the vulnerability database (serve
// --vuln-db, convert/vulns) says is affected. Matching is at the module
// level: a version is affected when a module's version is in an entry's
// affected ranges, whether or not the provider calls the vulnerable code.

// Vulnerability actions and what a version without an SBOM gets.
const (
	VulnDeny  = "deny"
	VulnWarn  = "warn"
	VulnAllow = "allow"
)

// maxVulnMessageFindings bounds the findings a denial or warning names:
// the rest are counted ("…and 12 more").
const maxVulnMessageFindings = 5

// Vulnerabilities is a rule's vulnerabilities block.
type Vulnerabilities struct {
	// Action is VulnDeny or VulnWarn.
	Action string
	// IDs, when non-nil, are the only entries acted on (by ID or alias).
	IDs map[string]bool
	// Allow are entries never acted on (by ID or alias).
	Allow map[string]bool
	// Missing is what a version with a platform without an SBOM gets:
	// VulnAllow (the default) or VulnDeny.
	Missing string
}

var vulnSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "action", Required: true}, {Name: "ids"}, {Name: "allow"}, {Name: "missing"}}}

// vulnID is what an entry's ID or alias looks like: GO-2022-1059,
// CVE-2022-32149, GHSA-69ch-w2m2-3vjp.
var vulnID = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*-[A-Za-z0-9._:-]+$`)

// parseVulnerabilities reads a rule's vulnerabilities blocks (at most
// one, in a provider rule).
func parseVulnerabilities(r *rule, blocks hcl.Blocks) error {
	for _, b := range blocks {
		if b.Type != "vulnerabilities" {
			continue
		}
		if r.kind != names.KindProvider {
			return posError(b.DefRange, "vulnerabilities: only a provider rule can have one (modules and OpenTofu releases have no provider SBOM)")
		}
		if r.vulns != nil {
			return posError(b.DefRange, "vulnerabilities: a rule has at most one such block")
		}
		content, diags := b.Body.Content(vulnSchema)
		if diags.HasErrors() {
			return diagError(diags)
		}
		v := &Vulnerabilities{Missing: VulnAllow}
		a := content.Attributes["action"]
		if err := decode(a, &v.Action); err != nil {
			return err
		}
		if v.Action != VulnDeny && v.Action != VulnWarn {
			return posError(a.Expr.Range(), fmt.Sprintf("vulnerabilities: action must be %q or %q, not %q", VulnDeny, VulnWarn, v.Action))
		}
		for _, name := range []string{"ids", "allow"} {
			a, ok := content.Attributes[name]
			if !ok {
				continue
			}
			var list []string
			if err := decodeList(a, &list); err != nil {
				return err
			}
			set := make(map[string]bool, len(list))
			for _, s := range list {
				if !vulnID.MatchString(s) || len(s) > 128 {
					return posError(a.Expr.Range(), fmt.Sprintf("vulnerabilities: %s: %q is not a vulnerability ID or alias (GO-2022-1059, CVE-2022-32149, GHSA-…)", name, s))
				}
				set[strings.ToUpper(s)] = true
			}
			if name == "ids" {
				if len(set) == 0 {
					return posError(a.Expr.Range(), "vulnerabilities: ids is empty: leave it out to act on every entry")
				}
				v.IDs = set
			} else {
				v.Allow = set
			}
		}
		if a, ok := content.Attributes["missing"]; ok {
			if err := decode(a, &v.Missing); err != nil {
				return err
			}
			if v.Missing != VulnAllow && v.Missing != VulnDeny {
				return posError(a.Expr.Range(), fmt.Sprintf("vulnerabilities: missing must be %q or %q, not %q", VulnAllow, VulnDeny, v.Missing))
			}
		}
		r.vulns = v
	}
	return nil
}

// PlatformVulns is what the stored SBOM of one platform of a release
// says, matched against the vulnerability database: Facts.Vulns.
type PlatformVulns struct {
	Platform string // os_arch
	// SBOM: one is stored (false: the platform has none, or none that
	// parses).
	SBOM bool
	// GoVersion and Modules sum the SBOM up: the toolchain of its Go
	// executables (the first one's), and how many modules they list.
	GoVersion string
	Modules   int
	// Findings are the database's entries affecting its modules.
	Findings []vulns.Finding
}

// HasVulnerabilities reports whether some rule has a vulnerabilities
// block: serve needs a database (--vuln-db) then.
func (p *Policy) HasVulnerabilities() bool {
	return p != nil && slices.ContainsFunc(p.rules, func(r *rule) bool { return r.vulns != nil })
}

// acted are the findings of ps that v acts on: in IDs (when set), not in
// Allow, each entry once (the first platform naming it).
func (v *Vulnerabilities) acted(ps []PlatformVulns) []vulns.Finding {
	var out []vulns.Finding
	seen := map[string]bool{}
	for _, p := range ps {
		for _, f := range p.Findings {
			names := append([]string{f.ID}, f.Aliases...)
			if seen[f.ID+" "+f.Module] || v.IDs != nil && !anyIn(v.IDs, names) || anyIn(v.Allow, names) {
				continue
			}
			seen[f.ID+" "+f.Module] = true
			out = append(out, f)
		}
	}
	return out
}

func anyIn(set map[string]bool, names []string) bool {
	for _, n := range names {
		if set[strings.ToUpper(n)] {
			return true
		}
	}
	return false
}

// Acts reports whether v acts on finding f: in IDs (when set), not in
// Allow.
func (v *Vulnerabilities) Acts(f vulns.Finding) bool {
	return v.acted([]PlatformVulns{{Findings: []vulns.Finding{f}}}) != nil
}

// decideVulns is rule r's vulnerabilities block's word on what (a
// version) given its platforms' SBOM facts: a denial, or an allowed
// decision (d) carrying the warning in Vulnerable.
func (r *rule) decideVulns(what string, ps []PlatformVulns, d Decision) Decision {
	v := r.vulns
	if v.Missing == VulnDeny {
		var missing []string
		for _, p := range ps {
			if !p.SBOM {
				missing = append(missing, p.Platform)
			}
		}
		if len(missing) > 0 {
			return Decision{Allow: false, Rule: r.name, Reason: fmt.Sprintf("%s has no SBOM stored for %s, and the policy's rule %q denies versions without one (vulnerabilities: missing = %q)", what, strings.Join(missing, ", "), r.name, VulnDeny)}
		}
	}
	acted := v.acted(ps)
	if len(acted) == 0 {
		return d
	}
	list := DescribeFindings(acted)
	if v.Action == VulnDeny {
		return Decision{Allow: false, Rule: r.name, Reason: fmt.Sprintf("%s has known vulnerabilities the policy's rule %q denies: %s", what, r.name, list), Vulnerable: findingIDs(acted)}
	}
	d.Vulnerable = findingIDs(acted)
	d.VulnWarning = "known vulnerabilities: " + list
	return d
}

func findingIDs(fs []vulns.Finding) []string {
	var out []string
	for _, f := range fs {
		if !slices.Contains(out, f.ID) {
			out = append(out, f.ID)
		}
	}
	return out
}

// DescribeFindings says what fs are, one line: "GO-2022-1059
// (CVE-2022-32149) in golang.org/x/text v0.3.7, fixed in v0.3.8", the
// first few and then how many more; it is short enough to be a message
// (ValidMessage).
func DescribeFindings(fs []vulns.Finding) string {
	var parts []string
	size := 0
	for i, f := range fs {
		s := clip(f.ID, 40)
		var cves []string
		for _, a := range f.Aliases {
			if strings.HasPrefix(a, "CVE-") && len(cves) < 2 {
				cves = append(cves, clip(a, 40))
			}
		}
		if len(cves) > 0 {
			s += " (" + strings.Join(cves, ", ") + ")"
		}
		s += " in " + clip(f.Module, 80) + " " + clip(f.Version, 40)
		if f.Fixed != "" {
			s += ", fixed in " + clip(f.Fixed, 40)
		} else {
			s += ", no fix"
		}
		if i == maxVulnMessageFindings || i > 0 && size+len(s) > maxMessageBytes/2 {
			parts = append(parts, fmt.Sprintf("and %d more", len(fs)-i))
			break
		}
		parts = append(parts, s)
		size += len(s) + 2
	}
	return strings.Join(parts, "; ")
}

// clip bounds s to n bytes and to printable characters (what a
// database's strings are; a hostile one's are not shown as written).
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// MatchSBOM is what db finds in doc, the SBOM of platform (os_arch): the
// modules of each Go executable, as govulncheck -scan module lists a
// binary's (a replaced module as its replacement, the main module, the
// standard library at the toolchain's version), matched for the GOOS and
// GOARCH it was built for (the platform's when unrecorded). A nil doc is
// a platform without an SBOM.
func MatchSBOM(db *vulns.DB, platform string, doc *sbom.Document) PlatformVulns {
	out := PlatformVulns{Platform: platform, SBOM: doc != nil}
	if doc == nil {
		return out
	}
	pos, parch, _ := strings.Cut(platform, "_")
	for _, e := range doc.Executables {
		g := e.Go
		if g == nil {
			continue
		}
		if out.GoVersion == "" {
			out.GoVersion = g.GoVersion
		}
		mods := make([]vulns.Module, 0, len(g.Deps)+2)
		for _, d := range g.Deps {
			if d.Replace != nil {
				d = *d.Replace
			}
			mods = append(mods, vulns.Module{Path: d.Path, Version: d.Version})
		}
		if g.Main.Path != "" {
			mods = append(mods, vulns.Module{Path: g.Main.Path, Version: g.Main.Version})
		}
		out.Modules += len(mods)
		if g.GoVersion != "" {
			mods = append(mods, vulns.Module{Path: vulns.Stdlib, Version: strings.Fields(g.GoVersion + " ")[0]})
		}
		goos, goarch := g.Settings["GOOS"], g.Settings["GOARCH"]
		if goos == "" {
			goos = pos
		}
		if goarch == "" {
			goarch = parch
		}
		if db != nil {
			out.Findings = append(out.Findings, db.MatchPlatform(goos, goarch, mods)...)
		}
	}
	return out
}

// Cost is about the bytes p takes, for a cache.
func (p PlatformVulns) Cost() int64 {
	n := int64(96 + len(p.Platform) + len(p.GoVersion))
	for _, f := range p.Findings {
		n += 128 + int64(len(f.ID)+len(f.Summary)+len(f.Module)+len(f.Version)+len(f.Fixed))
		for _, a := range f.Aliases {
			n += 16 + int64(len(a))
		}
	}
	return n
}

// HasFindings reports whether the database found a known vulnerability
// in any of ps.
func HasFindings(ps []PlatformVulns) bool {
	return slices.ContainsFunc(ps, func(p PlatformVulns) bool { return len(p.Findings) > 0 })
}
