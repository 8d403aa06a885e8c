package policy

import "github.com/oci-tofu/oci-tofu/oci/names"

// RuleInfo describes one rule, for the page and `serve --check`.
type RuleInfo struct {
	Kind names.Kind
	Name string
	// Pattern is the normalised address pattern ("" for tofu).
	Pattern string
}

// RuleList is the rules in the order of the file.
func (p *Policy) RuleList() []RuleInfo {
	if p == nil {
		return nil
	}
	out := make([]RuleInfo, len(p.rules))
	for i, r := range p.rules {
		out[i] = RuleInfo{Kind: r.kind, Name: r.name, Pattern: r.pattern}
	}
	return out
}

// HasRule says whether p has a rule of kind named name.
func (p *Policy) HasRule(kind names.Kind, name string) bool {
	if p == nil {
		return false
	}
	for _, r := range p.rules {
		if r.kind == kind && r.name == name {
			return true
		}
	}
	return false
}

// DenyByDefault says whether an address no rule matches is denied
// (default = "deny").
func (p *Policy) DenyByDefault() bool { return p != nil && p.denyByDefault }

// DefaultWritten says whether the file writes its default out (default =
// "allow" or "deny") rather than leaving it to the implicit "allow": what a
// reload asks of a file that could otherwise be one cut short
// (protocol/policyfile).
func (p *Policy) DefaultWritten() bool { return p != nil && p.defaultWritten }
