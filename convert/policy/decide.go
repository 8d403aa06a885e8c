package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Decision is the policy's word on a release: whether it is allowed, the
// name of the rule that decided ("default" when none matched), and why,
// in a sentence fit for a client.
type Decision struct {
	Allow  bool   `json:"allow"`
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	// AgesIn, for a version min_age denies, is when it will be old
	// enough (DecideWith).
	AgesIn time.Time `json:"ages_in,omitzero"`
	// DependsOn, for a decision made without the registry
	// (DecideOffline), names what it depends on: "min_age", "signers".
	DependsOn []string `json:"depends_on,omitempty"`
	// Deprecated, for a version allowed but deprecated by the deciding
	// rule, is the message of its deprecated block: clients are warned
	// with it.
	Deprecated string `json:"deprecated,omitempty"`
	// Vulnerable are the IDs of the known vulnerabilities the deciding
	// rule's vulnerabilities block acts on (DecideWith): a denial names
	// them in Reason, an allowed version is warned of them with
	// VulnWarning.
	Vulnerable  []string `json:"vulnerable,omitempty"`
	VulnWarning string   `json:"vulnerability_warning,omitempty"`
}

// DefaultRule is the Decision.Rule of a decision no block made.
const DefaultRule = "default"

// match is the first rule of kind matching address, in the order of the
// file: a narrow rule must come before a broad one to take effect.
// Addresses are "hostname/namespace/type" for providers,
// "hostname/namespace/name/system" for modules, anything for tofu. The
// index (index.go) finds it without trying every rule.
func (p *Policy) match(kind names.Kind, address string) *rule {
	address = strings.ToLower(address)
	i := -1
	if p.index != nil {
		i = p.index.first(p.rules, kind, address)
	} else {
		i = scan(p.rules, kind, address)
	}
	if i >= 0 {
		return p.rules[i]
	}
	return nil
}

func (p *Policy) defaultDecision(kind names.Kind, address string) Decision {
	if p.denyByDefault {
		return Decision{Allow: false, Rule: DefaultRule, Reason: fmt.Sprintf("no %s rule of the policy matches %s, and the policy's default is deny", kind, address)}
	}
	return Decision{Allow: true, Rule: DefaultRule, Reason: fmt.Sprintf("no %s rule of the policy matches %s, and the policy's default is allow", kind, address)}
}

// Decide says whether the version of address (of kind names.KindProvider,
// names.KindModule or names.KindTofu) may be served: the first matching rule decides
// (a version it denies outright, or that does not meet its versions, is
// denied; any other allowed), and without one the default. A nil Policy
// allows everything. An empty version asks about the address alone: it
// is allowed when some version may be.
func (p *Policy) Decide(kind names.Kind, address, version string) Decision {
	if p == nil {
		return Decision{Allow: true, Rule: DefaultRule, Reason: "no policy"}
	}
	r := p.match(kind, address)
	if r == nil {
		return p.defaultDecision(kind, address)
	}
	if version == "" {
		reason := fmt.Sprintf("allowed by rule %q", r.name)
		if r.versions != "" || len(r.deny) > 0 || len(r.revoked) > 0 {
			reason += " for the versions it allows" + r.describeVersions()
		}
		return Decision{Allow: true, Rule: r.name, Reason: reason}
	}
	v, err := names.ParseVersion(version)
	if err != nil {
		return Decision{Allow: false, Rule: r.name, Reason: fmt.Sprintf("%q is not a version", version)}
	}
	return r.decideVersion(address, v)
}

// DecideVersion is Decide for a version already parsed: what the proxy
// asks once per version it lists.
func (p *Policy) DecideVersion(kind names.Kind, address string, v names.Version) Decision {
	if p == nil {
		return Decision{Allow: true, Rule: DefaultRule, Reason: "no policy"}
	}
	r := p.match(kind, address)
	if r == nil {
		return p.defaultDecision(kind, address)
	}
	return r.decideVersion(address, v)
}

// decideVersion is rule r's word on version v of address.
// A revoked version is denied first: its message says more than a deny
// or versions would.
func (r *rule) decideVersion(address string, v names.Version) Decision {
	if d, revoked := r.revocation(address, v); revoked {
		return d
	}
	for _, d := range r.deny {
		if d.Same(v) {
			return Decision{Allow: false, Rule: r.name, Reason: fmt.Sprintf("%s %s is denied by the policy's rule %q", address, v, r.name)}
		}
	}
	if r.admits != nil && !r.admits.Has(v) {
		return Decision{Allow: false, Rule: r.name, Reason: fmt.Sprintf("%s %s does not meet versions = %q of the policy's rule %q", address, v, r.versions, r.name)}
	}
	return Decision{Allow: true, Rule: r.name, Reason: address + " " + v.String() + " is allowed by the policy's rule " + strconv.Quote(r.name), Deprecated: r.deprecation(v)}
}

func (r *rule) describeVersions() string {
	var parts []string
	if r.versions != "" {
		parts = append(parts, fmt.Sprintf("versions = %q", r.versions))
	}
	if len(r.deny) > 0 {
		ds := make([]string, len(r.deny))
		for i, d := range r.deny {
			ds[i] = d.String()
		}
		parts = append(parts, "deny = ["+strings.Join(ds, ", ")+"]")
	}
	for _, b := range r.revoked {
		parts = append(parts, fmt.Sprintf("revoked %s", b.describe()))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// Platform says whether a platform ("linux_amd64") of address may be
// served: the first matching rule's platforms, when it lists them; every
// platform otherwise. It does not repeat Decide's version check.
func (p *Policy) Platform(kind names.Kind, address, platform string) Decision {
	if p == nil {
		return Decision{Allow: true, Rule: DefaultRule, Reason: "no policy"}
	}
	r := p.match(kind, address)
	if r == nil || r.platforms == nil {
		name := DefaultRule
		if r != nil {
			name = r.name
		}
		return Decision{Allow: true, Rule: name, Reason: "every platform is allowed"}
	}
	if r.platforms[strings.ToLower(platform)] {
		return Decision{Allow: true, Rule: r.name, Reason: fmt.Sprintf("%s is among the platforms of the policy's rule %q", platform, r.name)}
	}
	return Decision{Allow: false, Rule: r.name, Reason: fmt.Sprintf("%s is not among the platforms of the policy's rule %q", platform, r.name)}
}

// Rules is the number of rules, for logs.
func (p *Policy) Rules() int {
	if p == nil {
		return 0
	}
	return len(p.rules)
}
