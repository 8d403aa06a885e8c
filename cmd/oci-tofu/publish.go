package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// What push provider and push mirror share: their SBOMs (--no-sbom, the
// report) and the target of a provider release (convert/publish).

func noSBOMFlag() cli.Flag {
	return &cli.BoolFlag{Name: "no-sbom", Usage: "store no SBOMs (by default each platform's SPDX SBOM, made from the Go build information of the executables in its zip, is stored as a referrer of its platform manifest before the version is tagged, and attested with --attest-key)"}
}

// providerPushTarget is t with what push provider adds: --no-sbom (and a
// note that an OCI layout gets no SBOMs), --sign-key.
func providerPushTarget(c *cli.Context, rep *reporter, t publish.Target, opts release.Options) publish.ProviderTarget {
	if t.Ref.Layout && !c.Bool("no-sbom") {
		rep.infof("%s: no SBOMs in an OCI layout (its index.json keeps to the tagged versions, as crane push and skopeo read it): oci-tofu sbom --backfill stores them where it is copied", t.Ref.Name())
	}
	return publish.ProviderTarget{Target: t, NoSBOM: c.Bool("no-sbom"), SumsSigner: opts.Signer}
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
