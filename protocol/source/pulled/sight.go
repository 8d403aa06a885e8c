// Package pulled is pull-through as a source: it wraps the held source of
// the repository pull-through stores into, and for what that does not
// hold, answers with what an allow-listed origin offers, fetched,
// verified and stored by the pull-through engine. Under a policy rule
// that reads facts of stored releases (min_age, signers) it hands out
// nothing from the origin: it lists what is stored and pulls the origin's
// newest versions in the background (their first sight), so their clock
// starts.
package pulled

import (
	"slices"
	"sort"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// FirstSightPulls bounds the background pulls one listing starts (the
// newest versions first; the engine's --pull-through-max-releases bounds
// them again, and a busy engine leaves the rest for a later listing).
const FirstSightPulls = 3

// FirstSightTimeout bounds reading an origin release before its pull.
const FirstSightTimeout = time.Minute

// FirstSight are the versions of offered to pull at first sight: the
// newest FirstSightPulls of those held does not have.
func FirstSight(held, offered []names.Version) []names.Version {
	newest := slices.Clone(offered)
	sort.Slice(newest, func(i, j int) bool { return newest[j].LessThan(newest[i]) })
	var out []names.Version
	for _, v := range newest {
		if len(out) == FirstSightPulls {
			break
		}
		if !slices.ContainsFunc(held, v.Same) {
			out = append(out, v)
		}
	}
	return out
}

// BeingFetched is the answer for version v of what (a provider, module
// or OpenTofu, named) the registry does not hold under rule, a rule with
// min_age or signers: its pull has been started.
func BeingFetched(what string, v names.Version, rule string) error {
	return source.NotFoundf("%s %s is not in this proxy's registry yet: it is being fetched from its origin, and the policy's rule %q serves it once it is stored and meets the rule's min_age and signers", what, v, rule)
}
