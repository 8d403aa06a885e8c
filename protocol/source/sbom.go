package source

import (
	"context"
	"errors"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// PlatformVulns is what db finds in the SBOM stored for platform pl of
// the provider release at root, cached per platform manifest and
// database (store.Repo.Described): read once, so warm decisions (and the
// page's SBOM views) read nothing. A platform whose SBOM referrers
// cannot be read or parsed has none; failing to ask the registry fails.
func PlatformVulns(ctx context.Context, db *vulns.DB, root Root, pl names.Platform) (policy.PlatformVulns, error) {
	subject := root.Index.Platforms[pl].Digest
	v, err := root.Repo.Described(ctx, "the SBOM's vulnerabilities (database "+db.Fingerprint()+")", subject,
		func(ctx context.Context, repo oci.ReadOnlyRepository, _ string) (any, int64, error) {
			st, err := sbom.Read(ctx, repo, subject)
			var doc *sbom.Document
			switch {
			case err == nil:
				doc = st.Doc
			case errors.Is(err, sbom.ErrNoSBOM), errors.Is(err, sbom.ErrBadSBOM):
			default:
				return nil, 0, err
			}
			pv := policy.MatchSBOM(db, pl.String(), doc)
			return pv, pv.Cost(), nil
		})
	if err != nil {
		return policy.PlatformVulns{}, err
	}
	pv, _ := v.(policy.PlatformVulns)
	pv.Platform = pl.String()
	return pv, nil
}

// SBOMSummary is what is cached of a platform's SBOM for the pages that
// show it (the SBOM page, a provider's catalogue page): its summary, or
// why there is none.
type SBOMSummary struct {
	Summary *sbom.Summary
	Missing string
}

// SBOMSummaryOf is the SBOM of platform pl of root, summed up, read once
// per platform manifest (store.Repo.Described).
func SBOMSummaryOf(ctx context.Context, root Root, pl names.Platform) (SBOMSummary, error) {
	subject := root.Index.Platforms[pl].Digest
	v, err := root.Repo.Described(ctx, "the SBOM's summary", subject, func(ctx context.Context, repo oci.ReadOnlyRepository, _ string) (any, int64, error) {
		st, err := sbom.Read(ctx, repo, subject)
		switch {
		case errors.Is(err, sbom.ErrNoSBOM):
			return SBOMSummary{Missing: "no SBOM stored"}, 64, nil
		case errors.Is(err, sbom.ErrBadSBOM):
			return SBOMSummary{Missing: "no readable SBOM stored: " + err.Error()}, int64(64 + len(err.Error())), nil
		case err != nil:
			return nil, 0, err
		}
		s := sbom.Summarize(pl, st)
		cost := int64(256)
		for _, e := range s.Executables {
			cost += int64(128 + len(e.Name) + len(e.NotGo) + len(e.MainModule) + len(e.Revision))
		}
		return SBOMSummary{Summary: &s}, cost, nil
	})
	if err != nil {
		return SBOMSummary{}, err
	}
	s, _ := v.(SBOMSummary)
	return s, nil
}
