package publish

import (
	"context"

	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
)

// PushTofu pushes rel, verified, to t; with t.Attest it then signs and
// attests the root (release.TofuPredicateType, attest.Attach). Unlike
// PushProvider, `push tofu` attests after its tag is written, as it
// always has (mirror and pull-through attest an OpenTofu release before:
// protocol/ingest). err is the push's, attestErr the attestation's.
func PushTofu(ctx context.Context, rel *release.Tofu, t Target) (res oci.PushResult, err, attestErr error) {
	res, err, _ = Push(ctx, t.Repo, rel, t.Options, nil, t.Also...)
	if err != nil || t.Attest == nil {
		return res, err, nil
	}
	pred := rel.Predicate(t.Ref.Name(), t.Attest.now(), t.Attest.Version)
	return res, nil, t.Attest.AttachPushed(ctx, t.Repo, t.Ref.Name(), res.Root.Digest, release.TofuPredicateType, pred)
}

// ReportTofuPushed prints what push tofu pushed: the pushed line, or
// with rep.JSON what was pushed.
func ReportTofuPushed(rep *report.Reporter, rel *release.Tofu, tagged oci.Reference, res oci.PushResult) error {
	files := make([]string, len(rel.Files))
	for i, f := range rel.Files {
		files[i] = f.Name
	}
	return rep.Result(map[string]any{
		"reference": tagged.String(), "digest": res.Root.Digest.String(), "version": rel.Version,
		"files": files, "up_to_date": res.UpToDate, "uploaded": res.Uploaded,
	}, report.PushedLine(tagged, res))
}
