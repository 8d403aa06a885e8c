package catalog

import (
	"context"
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Search: every word of the query must be found in a module's address or
// in the interface of its newest served version (README title and text
// excluded: descriptions, input and output names and descriptions,
// resource types, providers used). Matches rank by where the words are
// found: the address first, then names, then descriptions.

// Match ranks, best first.
const (
	rankAddress = iota
	rankName
	rankDescription
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
}

type field struct {
	where, text string
	rank        int
}

// textOf is what doc's root module offers to a search.
func textOf(m *moduledoc.Module) searchText {
	var st searchText
	add := func(where, text string, rank int) {
		if text != "" {
			st.fields = append(st.fields, field{where, text, rank})
		}
	}
	for _, in := range m.Inputs {
		add("input", in.Name, rankName)
		add("description", in.Description, rankDescription)
	}
	for _, out := range m.Outputs {
		add("output", out.Name, rankName)
		add("description", out.Description, rankDescription)
	}
	for _, r := range m.Resources {
		add("resource", r.Type, rankName)
	}
	for _, p := range m.RequiredProviders {
		add("provider", p.Address, rankName)
	}
	return st
}

// rank is how well a (with text, nil when its interface was not read)
// matches words: rankNone when some word is found nowhere; the hits
// that found words outside the address.
func rank(a source.ModuleAddress, st *searchText, words []string) (int, []Hit) {
	address := a.String()
	best := rankAddress
	var hits []Hit
	for _, w := range words {
		if strings.Contains(address, w) {
			continue
		}
		if st == nil {
			return rankNone, nil
		}
		i := slices.IndexFunc(st.fields, func(f field) bool { return strings.Contains(strings.ToLower(f.text), w) })
		if i < 0 {
			return rankNone, nil
		}
		f := st.fields[i]
		best = max(best, f.rank)
		hits = append(hits, Hit{Where: f.where, Text: clipText(f.text)})
	}
	return best, hits
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
	vs := make(names.VersionList, len(l.Versions))
	for i, e := range l.Versions {
		vs[i] = e.Version
	}
	v, ok := newestOf(vs)
	if !ok {
		return nil, "", nil
	}
	rel, err := h.Modules.ModuleRelease(ctx, a, v)
	if source.Absent(err) || err == nil && rel.Root == nil {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	m, err := h.Docs.SearchModule(ctx, *rel.Root)
	if source.Absent(err) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	st := textOf(m)
	return &st, v.String(), nil
}
