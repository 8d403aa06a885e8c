package ingest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Report prints the warnings of each release mirrored, then one line per
// release (or with rep.JSON the result), and returns how many failed.
func Report(rep *report.Reporter, results []Result) (failed int) {
	for _, r := range results {
		if r.Error != "" {
			failed++
		}
		rep.Warn(r.Provider+r.Module+" "+r.Version, r.Warnings)
	}
	if rep.JSON {
		rep.Result(map[string]any{"ok": failed == 0, "results": results}, "")
	} else if !rep.Quiet {
		for _, r := range results {
			switch {
			case r.Error != "":
				fmt.Fprintf(rep.Out, "FAILED   %s %s: %s\n", r.Provider+r.Module, r.Version, r.Error)
			case r.Denied != "":
				fmt.Fprintf(rep.Out, "denied   %s %s: %s (not mirrored)\n", r.Provider+r.Module, r.Version, r.Denied)
			case r.Skipped:
				fmt.Fprintf(rep.Out, "complete %s %s (%s)%s\n", r.Provider+r.Module, r.Version, r.Digest, attestedNote(r))
			default:
				fmt.Fprintf(rep.Out, "mirrored %s %s → %s@%s%s%s\n", r.Provider+r.Module, r.Version, r.Reference, r.Digest, attestedNote(r), sbomNote(r.SBOMs))
			}
		}
	}
	return failed
}

// sbomNote says what became of a pushed release's SBOMs: how many were
// written, and each platform left without one, with why.
func sbomNote(sboms map[string]string) string {
	if len(sboms) == 0 {
		return ""
	}
	written := 0
	var without []string
	for _, p := range slices.Sorted(maps.Keys(sboms)) {
		switch st := sboms[p]; st {
		case string(release.SBOMWritten):
			written++
		case string(release.SBOMPresent):
		default:
			without = append(without, p+" ("+st+")")
		}
	}
	note := fmt.Sprintf(", %s written", names.Plural(written, "SBOM"))
	if len(without) > 0 {
		note += "; no SBOM for " + strings.Join(without, ", ")
	}
	return note
}

// attestedNote marks a release signed and attested by this run.
func attestedNote(r Result) string {
	if r.Attested {
		return ", signed and attested"
	}
	return ""
}
