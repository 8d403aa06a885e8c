package policy

import "github.com/oci-tofu/oci-tofu/oci/names"

// KeepBlock is one keep block of the file, for prune: the rule it belongs
// to and where it is written.
type KeepBlock struct {
	Kind names.Kind
	// Rule is the rule's name; Pattern its normalised pattern ("" for
	// tofu).
	Rule, Pattern string
	// At is where the block is written: file:line.
	At string
}

// KeepBlocks are the file's keep blocks, in its order.
func (p *Policy) KeepBlocks() []KeepBlock {
	if p == nil {
		return nil
	}
	var out []KeepBlock
	for _, r := range p.rules {
		for _, b := range r.keep {
			out = append(out, KeepBlock{Kind: r.kind, Rule: r.name, Pattern: r.pattern, At: b.at})
		}
	}
	return out
}

// KeepBlocksDeciding are where the keep blocks of the rule deciding
// address are written (KeepBlock.At): the blocks Keeps asks about it.
func (p *Policy) KeepBlocksDeciding(kind names.Kind, address string) []string {
	if p == nil {
		return nil
	}
	r := p.match(kind, address)
	if r == nil {
		return nil
	}
	out := make([]string, len(r.keep))
	for i, b := range r.keep {
		out[i] = b.at
	}
	return out
}

// Keeps reports whether a keep block of the rule deciding address is
// about version v: prune must never remove it, whatever else it decides.
func (p *Policy) Keeps(kind names.Kind, address string, v names.Version) bool {
	if p == nil {
		return false
	}
	r := p.match(kind, address)
	return r != nil && firstMatching(r.keep, v) != nil
}
