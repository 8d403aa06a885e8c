package policy

import (
	"path"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// index finds the first rule of a kind matching an address without
// trying every rule: a decision is made per version listed, and a policy
// may have MaxRules rules (docs/benchmarks.md). Rules whose pattern has no
// wildcard are found in a map. Those with one are kept by kind and the
// segments before their first wildcard ("registry.opentofu.org/hashicorp"
// for registry.opentofu.org/hashicorp/*): an address can only match those
// filed under one of its own leading segments, and these few lists are
// tried together in the order of the file, only as far as the first
// exact match. So the first rule in the file that matches still decides
// (scan is the plain reading of that rule, and the tests hold the two to
// the same answers).
type index struct {
	exact    map[names.Kind]map[string]int   // kind → pattern → position of its first rule
	wildcard map[names.Kind]map[string][]int // kind → literal leading segments → positions, ascending
	tofu     int                             // position of the first tofu rule, -1 for none
}

// literalPrefix is the segments of pattern before its first one with a
// wildcard, joined by "/" ("" when the first has one).
func literalPrefix(pattern string) string {
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		if strings.ContainsAny(s, `*?[\`) {
			return strings.Join(segs[:i], "/")
		}
	}
	return pattern
}

func newIndex(rules []*rule) *index {
	ix := &index{exact: map[names.Kind]map[string]int{}, wildcard: map[names.Kind]map[string][]int{}, tofu: -1}
	for _, kind := range []names.Kind{names.KindProvider, names.KindModule} {
		ix.exact[kind], ix.wildcard[kind] = map[string]int{}, map[string][]int{}
	}
	for i, r := range rules {
		switch {
		case r.kind == names.KindTofu:
			if ix.tofu < 0 {
				ix.tofu = i
			}
		case strings.ContainsAny(r.pattern, `*?[\`):
			w := ix.wildcard[r.kind]
			w[literalPrefix(r.pattern)] = append(w[literalPrefix(r.pattern)], i)
		default:
			if _, ok := ix.exact[r.kind][r.pattern]; !ok {
				ix.exact[r.kind][r.pattern] = i
			}
		}
	}
	return ix
}

// first is the position of the first rule of kind matching address
// (lower case), or -1.
func (ix *index) first(rules []*rule, kind names.Kind, address string) int {
	if kind == names.KindTofu {
		return ix.tofu
	}
	found, ok := ix.exact[kind][address]
	if !ok {
		found = len(rules)
	}
	// The wildcard rules filed under "", the first segment, the first
	// two, …: merged in the order of the file. No allocation: the
	// prefixes are slices of address.
	w := ix.wildcard[kind]
	var buf [8][]int
	lists := buf[:0]
	if l := w[""]; len(l) > 0 {
		lists = append(lists, l)
	}
	for i := 0; i < len(address); i++ {
		if address[i] != '/' {
			continue
		}
		if l := w[address[:i]]; len(l) > 0 {
			lists = append(lists, l)
		}
	}
	for {
		next, from := found, -1
		for k, l := range lists {
			if len(l) > 0 && l[0] < next {
				next, from = l[0], k
			}
		}
		if from < 0 {
			break
		}
		lists[from] = lists[from][1:]
		if ok, _ := path.Match(rules[next].pattern, address); ok {
			return next
		}
	}
	if found == len(rules) {
		return -1
	}
	return found
}

// scan is the first rule of kind matching address (lower case), trying
// each in the order of the file.
func scan(rules []*rule, kind names.Kind, address string) int {
	for i, r := range rules {
		if r.kind != kind {
			continue
		}
		if r.kind == names.KindTofu {
			return i
		}
		if ok, _ := path.Match(r.pattern, address); ok {
			return i
		}
	}
	return -1
}
