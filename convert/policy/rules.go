package policy

// RuleInfo describes one rule, for the page and `serve --check`.
type RuleInfo struct {
	Kind, Name string
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
func (p *Policy) HasRule(kind, name string) bool {
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
