package prune

import (
	"context"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
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
		if err := Apply(ctx, del, targets[i].Ref.Registry, p); err != nil {
			return err
		}
	}
	return nil
}
