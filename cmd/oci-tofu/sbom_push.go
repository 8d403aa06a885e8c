package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
)

func noSBOMFlag() cli.Flag {
	return &cli.BoolFlag{Name: "no-sbom", Usage: "store no SBOMs (by default each platform's SPDX SBOM, made from the Go build information of the executables in its zip, is stored as a referrer of its platform manifest before the version is tagged, and attested with --attest-key)"}
}

// configureSBOMs sets what rel's push to ref does about SBOMs: none
// with --no-sbom, nor into an OCI layout; with a signer, each attested
// (predicate type sbom.SPDXPredicateType).
//
// An OCI layout push writes none because a layout's index.json lists
// only the tagged versions, which is what `crane push DIR` and skopeo
// take a layout by (TestLayoutForOtherTools): referrers would be listed
// there untagged. `oci-tofu sbom --backfill` stores them where the
// layout is copied to (or into the layout, if wanted).
func configureSBOMs(c *cli.Context, rep *reporter, rel *release.Provider, ref oci.Reference, signer *attest.Signer) {
	rel.SBOM.Skip = c.Bool("no-sbom") || ref.Layout
	if ref.Layout && !c.Bool("no-sbom") {
		rep.infof("%s: no SBOMs in an OCI layout (its index.json keeps to the tagged versions, as crane push and skopeo read it): oci-tofu sbom --backfill stores them where it is copied", ref.Name())
	}
	if signer != nil && !rel.SBOM.Skip {
		a := &ingest.Attestation{Attester: keyAttester{s: signer, log: func(format string, args ...any) { rep.infof(format, args...) }}, Version: version}
		rel.SBOM.Attest = a.SBOM(ref.Name())
	}
}

// reportSBOMs says what became of rel's SBOMs (a line, a warning for
// each platform left without one) and returns them for --json.
func reportSBOMs(rep *reporter, rel *release.Provider) []map[string]any {
	out := []map[string]any{}
	written, present := 0, 0
	for _, r := range rel.SBOMs() {
		m := map[string]any{"platform": r.Platform.String(), "manifest": r.Manifest.String(), "status": string(r.Status)}
		if r.Referrer != "" {
			m["referrer"] = r.Referrer.String()
		}
		if r.Attested {
			m["attested"] = true
		}
		switch r.Status {
		case release.SBOMWritten:
			written++
		case release.SBOMPresent:
			present++
		default:
			m["reason"] = r.Err.Error()
			rep.warn(rel.Type+" "+rel.Version, []string{fmt.Sprintf("%s: no SBOM stored: %v", r.Platform, r.Err)})
		}
		out = append(out, m)
	}
	if written+present > 0 {
		rep.infof("%s %s: %s written, %d present already", rel.Type, rel.Version, names.Plural(written, "SBOM"), present)
	}
	return out
}
