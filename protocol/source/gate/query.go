package gate

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Query is one decision `oci-tofu policy test` prints: the policy's
// on an address and version, offline or, against the registry, as the
// gate makes it (Explain), with --as a client's access.
type Query struct {
	Kind    names.Kind `json:"kind"`
	Address string     `json:"address"`
	Version string     `json:"version,omitempty"`
	// Held, against the registry, says whether it holds the version.
	Held *bool `json:"held,omitempty"`
	policy.Decision
	// Admission, against the registry with serve's admission flags, is
	// their word on a held version the policy allows.
	Admission *AdmissionVerdict `json:"admission,omitempty"`
	// Access, with --as, is whether that client may read the address.
	Access *ClientAccess `json:"access,omitempty"`
}

// MarshalJSON writes q with the verdict first: "verdict" is the word the
// text line starts with, "allow" is true exactly when it is allow (what
// serve serves to that caller), and "policy_allows" is the policy's own
// decision (before --as's access and the admission flags' word).
func (q Query) MarshalJSON() ([]byte, error) {
	type fields Query // without this method
	verdict := q.Verdict()
	return json.Marshal(struct {
		Verdict      string `json:"verdict"`
		Allow        bool   `json:"allow"`
		PolicyAllows bool   `json:"policy_allows"`
		fields
	}{verdict, verdict == "allow", q.Allow, fields(q)})
}

// ClientAccess is whether a client may read an address, and why.
type ClientAccess struct {
	Client string `json:"client"`
	Reads  bool   `json:"reads"`
	Reason string `json:"reason"`
}

// Verdict is the word policy test prints first: allow, deny, depends
// (offline: on facts of the registry), or refuse (the policy allows it,
// serve's admission flags refuse the release).
func (q Query) Verdict() string {
	switch {
	case q.Access != nil && !q.Access.Reads:
		return "deny"
	case q.Allow && q.Admission != nil && !q.Admission.Admitted:
		return "refuse"
	case q.Allow:
		return "allow"
	case len(q.DependsOn) > 0:
		return "depends"
	}
	return "deny"
}

// Explanation is the rule and reason policy test prints, with the
// deprecation's message and the admission's word when there are.
func (q Query) Explanation() string {
	s := fmt.Sprintf("rule %q: %s", q.Rule, q.Reason)
	if q.VulnWarning != "" { // allowed, and clients warned of it
		s += "; " + q.VulnWarning
	}
	if q.Deprecated != "" { // allowed, and clients warned of it
		s += "; deprecated: " + q.Deprecated
	}
	if q.Access != nil {
		s = q.Access.Reason + "; " + s
	}
	switch {
	case q.Admission == nil:
	case q.Admission.Admitted:
		s += "; admitted"
	default:
		s += "; not admitted: " + q.Admission.Reason
	}
	return s
}

// ParseQuery reads ADDRESS[@VERSION] (policy.ParseAddress).
func ParseQuery(arg string) (Query, error) {
	addr, version, _ := strings.Cut(arg, "@")
	if version != "" {
		if _, err := names.ParseVersion(version); err != nil {
			return Query{}, fmt.Errorf("%s: %v", arg, err)
		}
	}
	kind, addr, err := policy.ParseAddress(addr)
	if err != nil {
		return Query{}, fmt.Errorf("%s: %v", arg, err)
	}
	return Query{Kind: kind, Address: addr, Version: version}, nil
}

// WithAccess sets each query's Access: whether client may read its
// address (policy test --as).
func WithAccess(queries []Query, client *policy.Client) {
	for i := range queries {
		queries[i].Access = AccessOf(client, queries[i])
	}
}

// AccessOf is whether client may read q's address (policy.Client.Access).
func AccessOf(client *policy.Client, q Query) *ClientAccess {
	reads, reason := client.Access(q.Kind, q.Address, time.Now())
	return &ClientAccess{Client: client.Name, Reads: reads, Reason: reason}
}

// Line is q as policy test prints it: the verdict, what was asked, and
// the explanation.
func (q Query) Line() string {
	what := q.Address
	if q.Version != "" {
		what += "@" + q.Version
	}
	return fmt.Sprintf("%-5s  %s %s  %s", q.Verdict(), q.Kind, what, q.Explanation())
}

// Queries are q answered by the gate's verdicts (Explain): one per
// version explained.
func Queries(q Query, verdicts []Verdict) []Query {
	out := make([]Query, len(verdicts))
	for i, v := range verdicts {
		held := v.Held
		out[i] = Query{Kind: q.Kind, Address: q.Address, Version: v.Version, Held: &held, Decision: v.Decision, Admission: v.Admission}
	}
	return out
}
