package policy

import (
	"path"
	"strings"
)

// index finds the first rule of a kind matching an address without
// trying every rule: a decision is made per version listed, and a policy
// may have MaxRules rules (docs/benchmarks.md). Rules whose pattern has no
// wildcard are found in a map; those with one are tried in the order of
// the file, only as far as the first exact match: the first rule in the
// file that matches still decides (scan is the plain reading of that
// rule, and the tests hold the two to the same answers).
type index struct {
	exact    map[string]int // kind + " " + pattern → position of its first rule
	wildcard map[string][]int
	tofu     int // position of the first tofu rule, -1 for none
}

func newIndex(rules []*rule) *index {
	ix := &index{exact: map[string]int{}, wildcard: map[string][]int{}, tofu: -1}
	for i, r := range rules {
		switch {
		case r.kind == KindTofu:
			if ix.tofu < 0 {
				ix.tofu = i
			}
		case strings.ContainsAny(r.pattern, `*?[\`):
			ix.wildcard[r.kind] = append(ix.wildcard[r.kind], i)
		default:
			if _, ok := ix.exact[r.kind+" "+r.pattern]; !ok {
				ix.exact[r.kind+" "+r.pattern] = i
			}
		}
	}
	return ix
}

// first is the position of the first rule of kind matching address
// (lower case), or -1.
func (ix *index) first(rules []*rule, kind, address string) int {
	if kind == KindTofu {
		return ix.tofu
	}
	found, ok := ix.exact[kind+" "+address]
	if !ok {
		found = len(rules)
	}
	for _, i := range ix.wildcard[kind] {
		if i >= found {
			break
		}
		if ok, _ := path.Match(rules[i].pattern, address); ok {
			return i
		}
	}
	if found == len(rules) {
		return -1
	}
	return found
}

// scan is the first rule of kind matching address (lower case), trying
// each in the order of the file.
func scan(rules []*rule, kind, address string) int {
	for i, r := range rules {
		if r.kind != kind {
			continue
		}
		if r.kind == KindTofu {
			return i
		}
		if ok, _ := path.Match(r.pattern, address); ok {
			return i
		}
	}
	return -1
}
