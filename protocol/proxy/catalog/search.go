package catalog

import (
	"context"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Search: every word of the query (case folded) must be found in a
// module's address or in the root module of its newest served version
// (input and output names and descriptions, resource types, providers
// used; not the README). A module ranks by the worst place one of its
// words is best found in, best first (ties in address order):
//
//  1. exact name: the whole query is the module's NAME, NAMESPACE/NAME,
//     NAMESPACE/NAME/SYSTEM or its address;
//  2. name word: every word is in the address;
//  3. input or output name;
//  4. description (of an input or an output);
//  5. resource type or provider address.

// Match ranks, best first.
const (
	rankExactName = iota
	rankNameWord
	rankInterfaceName
	rankDescription
	rankUses
	rankNone
)

// Hit is why a module matched a search.
type Hit struct {
	// Where names what matched: "address", "input", "output",
	// "resource", "provider", "description".
	Where string `json:"where"`
	Text  string `json:"text"`
}

// searchText is what a module's newest version offers to a search.
type searchText struct {
	fields []field
	// providers are the provider addresses the module requires.
	providers []names.Provider
}

type field struct {
	where, text string
	// folded is text, case folded.
	folded string
	rank   int
}

// searchTextOf is textOf, as source.Searched.Made keeps it.
func searchTextOf(m *moduledoc.Module) any {
	st := textOf(m)
	return &st
}

// textOf is what doc's root module offers to a search, its texts also
// case folded.
func textOf(m *moduledoc.Module) searchText {
	var st searchText
	add := func(where, text string, rank int) {
		if text != "" {
			st.fields = append(st.fields, field{where: where, text: text, folded: strings.ToLower(text), rank: rank})
		}
	}
	for _, in := range m.Inputs {
		add("input", in.Name, rankInterfaceName)
		add("description", in.Description, rankDescription)
	}
	for _, out := range m.Outputs {
		add("output", out.Name, rankInterfaceName)
		add("description", out.Description, rankDescription)
	}
	for _, r := range m.Resources {
		add("resource", r.Type, rankUses)
	}
	for _, p := range m.RequiredProviders {
		add("provider", p.Address, rankUses)
		if pa, err := names.ParseProvider(p.Address); err == nil {
			st.providers = append(st.providers, pa)
		}
	}
	return st
}

// rank is how well a (with text, nil when its interface was not read)
// matches q, split into words: rankNone when some word is found nowhere;
// the hits that found words outside the address, each word where it
// ranks best.
func rank(a source.ModuleAddress, st *searchText, q string, words []string) (int, []Hit) {
	if exactName(a, q) {
		return rankExactName, nil
	}
	address := a.String()
	best := rankNameWord
	var hits []Hit
	for _, w := range words {
		if strings.Contains(address, w) {
			continue
		}
		if st == nil {
			return rankNone, nil
		}
		i := bestField(st.fields, w)
		if i < 0 {
			return rankNone, nil
		}
		f := st.fields[i]
		best = max(best, f.rank)
		hits = append(hits, Hit{Where: f.where, Text: clipText(f.text)})
	}
	return best, hits
}

// exactName reports whether q (case folded) is a's name: NAME,
// NAMESPACE/NAME, NAMESPACE/NAME/SYSTEM or its address.
func exactName(a source.ModuleAddress, q string) bool {
	q = strings.ToLower(strings.TrimSpace(q))
	m := a.Module
	return q != "" && (q == m.Name || q == m.Namespace+"/"+m.Name || q == m.String() || q == a.String())
}

// bestField is the index of the best-ranked field holding w (the first
// of those), or -1.
func bestField(fields []field, w string) int {
	best := -1
	for i, f := range fields {
		if (best < 0 || f.rank < fields[best].rank) && strings.Contains(f.folded, w) {
			best = i
		}
	}
	return best
}

// clipText is s on one line, at most 120 bytes.
func clipText(s string) string { return firstLine(s) }

// searchable is the search text of a's newest served version; nil when
// it has none or its interface cannot be read (it is then found by its
// address only).
func (h *Handlers) searchable(ctx context.Context, a source.ModuleAddress) (*searchText, string, error) {
	l, err := h.Modules.ModuleVersions(ctx, a)
	if source.Absent(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	v, ok := newestListed(l.Versions)
	if !ok {
		return nil, "", nil
	}
	rel, err := h.Modules.ModuleRelease(ctx, a, v)
	if err != nil || rel.Root == nil { // an artifact that is no module package: nothing to search, as nothing to serve
		return nil, "", h.Out.LeftOut("module "+a.String(), v, err)
	}
	s, err := h.Docs.SearchModule(ctx, *rel.Root)
	if err != nil {
		return nil, "", h.Out.LeftOut("module "+a.String(), v, err)
	}
	st, _ := s.Made(searchTextOf).(*searchText)
	return st, v.String(), nil
}
