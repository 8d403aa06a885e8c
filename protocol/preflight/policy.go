package preflight

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// PolicyConfig is what the policy check needs: the policy, its file (the
// rows' Mapping), and what the proxy maps.
type PolicyConfig struct {
	Policy    *policy.Policy
	File      string
	Providers store.ProviderMappings
	Modules   bool // a module template is configured
	Tofu      bool // an OpenTofu repository is configured
	// OperatorTokens is how many --auth-token-file tokens serve has;
	// Now the time client expiries are judged at (default time.Now).
	OperatorTokens int
	Now            time.Time
}

// Policy checks the policy file against what the proxy maps: a rule
// whose pattern no mapped address can match (a provider pattern outside
// every mapping's include patterns or inside its exclude patterns, a
// module rule without a module template, a tofu rule without an OpenTofu
// repository) is a warning, since it decides nothing. One row sums up a
// policy without any. (What a rule needs from outside the file, a
// signer's key, is read when the file is parsed: a key that cannot be
// read is an error of the file, before any check.)
func Policy(cfg PolicyConfig) []Result {
	row := func(status, target, detail string) Result {
		return Result{Target: target, Mapping: cfg.File, Status: status, Detail: detail}
	}
	var out []Result
	for _, r := range cfg.Policy.RuleList() {
		if why := cfg.unmatched(r); why != "" {
			out = append(out, row(StatusWarning, fmt.Sprintf("policy %s rule %q", r.Kind, r.Name), why))
		}
	}
	if len(out) == 0 {
		out = append(out, row(StatusOK, "policy", names.Plural(cfg.Policy.Rules(), "rule")+", each can match what this proxy maps"))
	}
	return append(out, Clients(cfg)...)
}

// unmatched says why rule r can match no mapped address ("" when it can).
func (cfg PolicyConfig) unmatched(r policy.RuleInfo) string {
	switch r.Kind {
	case names.KindTofu:
		if !cfg.Tofu {
			return "no OpenTofu repository is configured: the rule decides nothing"
		}
	case names.KindModule:
		if !cfg.Modules {
			return "no module template is configured: the rule decides nothing"
		}
	case names.KindProvider:
		for _, m := range cfg.Providers {
			if mappingMayCover(m, r.Pattern) {
				return ""
			}
		}
		return fmt.Sprintf("%s matches no provider address a mapping admits (their include and exclude patterns): the rule decides nothing", r.Pattern)
	}
	return ""
}

// mappingMayCover says whether some address matching pattern may be
// covered by m: one of its include patterns (any, without) overlaps
// pattern, and no exclude pattern covers it whole.
func mappingMayCover(m store.ProviderMapping, pattern string) bool {
	for _, ex := range m.Exclude {
		if covered, _ := path.Match(ex, pattern); covered {
			return false
		}
	}
	if len(m.Include) == 0 {
		return true
	}
	for _, in := range m.Include {
		if overlap(in, pattern) {
			return true
		}
	}
	return false
}

// overlap says whether two host/namespace/type patterns, each segment a
// name or "*", can match one address.
func overlap(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if as[i] != "*" && bs[i] != "*" && !strings.EqualFold(as[i], bs[i]) {
			return false
		}
	}
	return true
}
