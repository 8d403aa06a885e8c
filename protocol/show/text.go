package show

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// Report prints p: the catalogue's document as JSON with rep.JSON, else
// for people.
func (p *Provider) Report(rep *report.Reporter) error {
	var b strings.Builder
	p.print(&b)
	return rep.Result(p.Page, strings.TrimSuffix(b.String(), "\n"))
}

// Report prints m: the catalogue's document as JSON with rep.JSON, else
// for people.
func (m *Module) Report(rep *report.Reporter) error {
	var b strings.Builder
	if err := m.print(&b); err != nil {
		return err
	}
	return rep.Result(m.Page, strings.TrimSuffix(b.String(), "\n"))
}

func (p *Provider) print(w io.Writer) {
	d := &p.Page
	fmt.Fprintf(w, "Provider %s %s%s\n", printable(d.Address), printable(d.Version), printable(newest(d.Version, d.Latest)))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Status:\t%s\n", printable(status(d.Status)))
	fmt.Fprintf(tw, "Stored in:\t%s@%s\n", printable(d.Repository), printable(d.Index))
	fmt.Fprintf(tw, "Protocols:\t%s\n", listOr(d.Protocols, "not known"))
	fmt.Fprintf(tw, "Publisher keys:\t%s\n", listOr(d.Signer.KeyIDs, "none (not signed by its publisher, or its provenance does not say)"))
	if d.Attestation != nil {
		fmt.Fprintf(tw, "Attestation:\t%s\n", printable(admission(d.Attestation)))
	}
	tw.Flush()
	printVersions(w, d.Versions)
	printPackages(w, d)
	printVulnerabilities(w, d.SBOMs)
}

// newest says whether v is the newest version served, latest.
func newest(v, latest string) string {
	if v == latest {
		return " (the newest served)"
	}
	return " (the newest served is " + latest + ")"
}

// status is a version's status with the policy's words.
func status(s catalog.VersionStatus) string {
	out := s.Status
	if s.Message != "" {
		out += ": " + s.Message
	}
	switch {
	case s.Reason != "" && (s.Rule == "" || strings.Contains(s.Reason, s.Rule)):
		out += " (" + s.Reason + ")"
	case s.Reason != "":
		out += " (rule " + s.Rule + ": " + s.Reason + ")"
	case s.Rule != "":
		out += " (rule " + s.Rule + ")"
	}
	if s.Warning != "" && s.Warning != s.Message {
		out += "; warning: " + s.Warning
	}
	return out
}

// printable is s as a terminal shows it, whatever a hostile package or
// registry wrote in it: each control or format character (escape
// sequences, bells, line breaks that would forge a line, bidirectional
// overrides) written as its code point, U+001B.
func printable(s string) string {
	if !strings.ContainsFunc(s, unprintable) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unprintable(r) {
			fmt.Fprintf(&b, "%U", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// unprintable says whether r is a control or format character.
func unprintable(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

func listOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return printable(strings.Join(s, ", "))
}

func admission(a *catalog.Admission) string {
	if a.Admitted {
		return a.PredicateType + " verified"
	}
	return a.PredicateType + " not verified: " + a.Reason
}

// printVersions lists the versions, newest first, with their status.
func printVersions(w io.Writer, vs []catalog.VersionStatus) {
	fmt.Fprintf(w, "\nVersions (%d, newest first):\n", len(vs))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, v := range vs {
		fmt.Fprintf(tw, "  %s\t%s\n", printable(v.Version), printable(status(v)))
	}
	tw.Flush()
}

// printPackages lists each platform's package, hashes and SBOM.
func printPackages(w io.Writer, d *catalog.ProviderPage) {
	sboms := map[string]catalog.PlatformSBOM{}
	for _, s := range d.SBOMs.Platforms {
		sboms[s.Platform] = s
	}
	fmt.Fprintf(w, "\nPlatforms (%d):\n", len(d.Packages))
	for _, pkg := range d.Packages {
		fmt.Fprintf(w, "  %s  %s  %s, %d bytes\n", printable(pkg.Platform), printable(pkg.Filename), printable(pkg.Digest), pkg.Size)
		for _, h := range pkg.Hashes {
			fmt.Fprintf(w, "    %s\n", printable(h))
		}
		fmt.Fprintf(w, "    SBOM: %s\n", printable(sbom(sboms[pkg.Platform])))
	}
}

// sbom is a platform's SBOM in short.
func sbom(s catalog.PlatformSBOM) string {
	switch {
	case !s.Stored && s.Missing != "":
		return "none (" + s.Missing + ")"
	case !s.Stored:
		return "none"
	case s.GoVersion == "":
		return fmt.Sprintf("%d modules", s.Modules)
	}
	return fmt.Sprintf("%s, main module %s, %d modules", s.GoVersion, s.MainModule, s.Modules)
}

// printVulnerabilities lists what the database finds, when one is read.
func printVulnerabilities(w io.Writer, s catalog.SBOMFacts) {
	if s.Database == "" {
		return
	}
	fmt.Fprintf(w, "\nKnown vulnerabilities (database %s): %d\n", printable(s.Database), len(s.Vulnerabilities))
	for _, v := range s.Vulnerabilities {
		fixed := "no fix"
		if v.Fixed != "" {
			fixed = "fixed in " + v.Fixed
		}
		fmt.Fprintf(w, "  %s  %s %s (%s) on %s", printable(v.ID), printable(v.Module), printable(v.Version), printable(fixed), printable(strings.Join(v.Platforms, ", ")))
		if v.Summary != "" {
			fmt.Fprintf(w, ": %s", printable(v.Summary))
		}
		fmt.Fprintln(w)
	}
}

func (m *Module) print(w io.Writer) error {
	d := &m.Page
	fmt.Fprintf(w, "Module %s %s%s\n", printable(d.Address), printable(d.Version), printable(newest(d.Version, d.Latest)))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Status:\t%s\n", printable(status(statusOf(d.Versions, d.Version))))
	fmt.Fprintf(tw, "Stored in:\t%s@%s\n", printable(d.Repository), printable(d.Manifest))
	fmt.Fprintf(tw, "Interface:\t%s\n", printable(d.Interface))
	tw.Flush()
	printVersions(w, d.Versions)
	fmt.Fprintln(w)
	doc := moduledoc.Doc{Package: moduledoc.Package{Root: *d.Module, Diagnostics: d.Diagnostics}}
	if err := doc.Print(w); err != nil {
		return err
	}
	var dirs []string
	for _, l := range append(append([]catalog.DirLink{}, d.Submodules...), d.Examples...) {
		dirs = append(dirs, l.Dir)
	}
	if len(dirs) > 0 {
		fmt.Fprintf(w, "\nAlso in the package: %s (every interface: oci-tofu show %s@%s)\n", printable(strings.Join(dirs, ", ")), printable(d.Repository), printable(d.Manifest))
	}
	return nil
}

// statusOf is version v's entry of vs.
func statusOf(vs []catalog.VersionStatus, v string) catalog.VersionStatus {
	for _, s := range vs {
		if s.Version == v {
			return s
		}
	}
	return catalog.VersionStatus{Version: v}
}
