package ingest

import (
	"slices"

	"github.com/apparentlymart/go-versions/versions"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Gate is the policy file's word on the versions Providers and Tofu
// would take: a version it denies is left out before anything of it is
// downloaded, and reported (Result.Denied) rather than mirrored; with
// WarnOnly it is mirrored with a warning naming the rule instead. The
// zero Gate allows everything.
type Gate struct {
	Policy *policy.Policy
	// WarnOnly records denials as warnings and refuses nothing, to roll
	// a policy out.
	WarnOnly bool
}

// refuses is the policy's refusal of version v of address, or nil when it
// allows it or only warns.
func (g Gate) refuses(kind names.Kind, address string, v versions.Version) error {
	if g.WarnOnly {
		return nil
	}
	return g.Policy.Check(kind, address, v.String())
}

// warnings is the warning a WarnOnly gate records for a version the
// policy denies; none otherwise.
func (g Gate) warnings(kind names.Kind, address string, v versions.Version) []string {
	if !g.WarnOnly {
		return nil
	}
	if err := g.Policy.Check(kind, address, v.String()); err != nil {
		return []string{"mirrored although " + err.Error() + " (the policy is only warning)"}
	}
	return nil
}

// split divides the versions chosen for address (provider in results)
// into those to take and the results of those the policy denies. An exact choice (a locked
// version) that the policy denies is an error instead: there is no other
// version to take.
func (g Gate) split(kind names.Kind, address, provider string, chosen versions.List, exact bool) (versions.List, []Result, error) {
	var take versions.List
	var denied []Result
	for _, v := range chosen {
		err := g.refuses(kind, address, v)
		switch {
		case err == nil:
			take = append(take, v)
		case exact:
			return nil, nil, err
		default:
			denied = append(denied, Result{Provider: provider, Version: v.String(), Denied: err.Error()})
		}
	}
	return take, denied, nil
}

// chooseTofu is the OpenTofu versions to take of those available (those
// matching opts.Versions, or the newest stable), among the ones the
// policy allows, and the results of the ones it denies that would have
// been taken without it.
func chooseTofu(available versions.List, opts TofuOptions) (versions.List, []Result) {
	pick := func(l versions.List) versions.List {
		if len(opts.Versions) > 0 {
			return names.MatchingVersions(l, opts.Versions)
		}
		if newest := l.NewestInSet(versions.Released); newest != versions.Unspecified {
			return versions.List{newest}
		}
		return nil
	}
	var allowed versions.List
	for _, v := range available {
		if opts.Gate.refuses(names.KindTofu, policy.TofuAddress, v) == nil {
			allowed = append(allowed, v)
		}
	}
	chosen := pick(allowed)
	var denied []Result
	for _, v := range pick(available) {
		err := opts.Gate.refuses(names.KindTofu, policy.TofuAddress, v)
		if err != nil && !slices.ContainsFunc(chosen, v.Same) {
			denied = append(denied, Result{Provider: "opentofu", Version: v.String(), Denied: err.Error()})
		}
	}
	return chosen, denied
}
