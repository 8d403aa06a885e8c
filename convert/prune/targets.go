package prune

import (
	"context"
	"fmt"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
)

// PlanTargets plans each target's pruning (MakePlan), the policy pol
// asked about the addresses serve may show it under (ServedAddresses,
// through tpl), then checks pol's keep blocks against the plans
// (CheckKeepBlocks: an error, or a warning). pol may be nil.
func PlanTargets(ctx context.Context, client *oci.Client, targets []Target, rules Rules, pol *policy.Policy, tpl *repotemplate.Template) ([]*Plan, string, error) {
	var plans []*Plan
	for _, t := range targets {
		addresses := func(kind names.Kind) ([]string, error) { return ServedAddresses(pol, tpl, t, kind) }
		repo, err := client.OpenReadOnly(ctx, t.Ref)
		if err != nil {
			return nil, "", err
		}
		p, err := MakePlan(ctx, repo, PlanOptions{Name: t.Ref.Name(), Rules: rules, Addresses: addresses})
		if err != nil {
			return nil, "", err
		}
		plans = append(plans, p)
	}
	if pol == nil {
		return plans, "", nil
	}
	w, err := CheckKeepBlocks(pol, plans)
	return plans, w, err
}

// ApplyPlans deletes what each target's plan lets go (Apply), stopping
// at the first failure (what was deleted before it is in the plans).
func ApplyPlans(ctx context.Context, client *oci.Client, targets []Target, plans []*Plan) error {
	for i, p := range plans {
		if n, _ := p.Total(); n == 0 {
			continue
		}
		del, err := client.OpenDeleter(targets[i].Ref)
		if err != nil {
			return err
		}
		err = Apply(ctx, del, targets[i].Ref.Registry, p)
		dropIndexEntries(ctx, client, targets[i].Ref, p)
		if err != nil {
			return err
		}
	}
	return nil
}

// dropIndexEntries removes from the repository's version index the
// entries of the versions Apply deleted (versionindex.DropGone): an
// index naming them would pin their manifests against the registry's
// garbage collection and disagree with the tags in verify and lint
// until the next push. A failure is p's IndexNote, not prune's.
func dropIndexEntries(ctx context.Context, client *oci.Client, ref oci.Reference, p *Plan) {
	p.IndexNote = ""
	repo, err := client.Open(ref)
	if err == nil {
		_, err = versionindex.DropGone(ctx, repo)
	}
	if err != nil {
		p.IndexNote = fmt.Sprintf("%s: the version index (tag %s) still names the versions deleted, until the next push rewrites it: %v", p.Repository.Name, versionindex.Tag, err)
	}
}

// IndexNotes are the plans' IndexNotes, for the report's warnings.
func IndexNotes(plans []*Plan) []string {
	var out []string
	for _, p := range plans {
		if p.IndexNote != "" {
			out = append(out, p.IndexNote)
		}
	}
	return out
}
