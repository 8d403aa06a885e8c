package catalog

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Provider search: every word of the query (case folded) must be in a
// provider's address, or be in a name its newest served version's
// documentation lists: the resources and data sources, each written as
// TYPE_slug (aws_instance). A provider found by its address ranks above
// one found by its documentation (ties in address order); hits say
// where each word outside the address was found.

// Where a provider search finds a word outside the address.
const (
	HitResource   = "resource"
	HitDataSource = "data_source"
)

// docNameCategories are the documentation categories whose slugs a
// search reads, with the hit each names.
var docNameCategories = map[string]string{"resources": HitResource, "data-sources": HitDataSource}

// docName is a resource or data source a release's documentation lists.
type docName struct {
	where, name string
}

// foundProviders are the providers of all matching every word of q,
// those found by their address first, then those found by their
// documentation, each in order; with why each matched outside its
// address. All of them, in order, for an empty q.
func (h *Handlers) foundProviders(ctx context.Context, all []names.Provider, q string) ([]names.Provider, map[names.Provider][]Hit, error) {
	words := strings.Fields(strings.ToLower(q))
	if len(words) == 0 {
		return all, nil, nil
	}
	hits := make([][]Hit, len(all))
	matched := make([]bool, len(all))
	err := h.Out.Store.Each(ctx, len(all), func(ctx context.Context, i int) error {
		missing := wordsOutside(all[i].String(), words)
		if len(missing) == 0 {
			matched[i] = true // each index by one goroutine
			return nil
		}
		names, err := h.providerDocNames(ctx, all[i])
		hits[i], matched[i] = docHits(names, missing)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var byAddress, byDocs []names.Provider
	why := map[names.Provider][]Hit{}
	for i, p := range all {
		switch {
		case !matched[i]:
		case len(hits[i]) == 0:
			byAddress = append(byAddress, p)
		default:
			byDocs = append(byDocs, p)
			why[p] = hits[i]
		}
	}
	return append(byAddress, byDocs...), why, nil
}

// wordsOutside are the words not in address.
func wordsOutside(address string, words []string) []string {
	return slices.DeleteFunc(slices.Clone(words), func(w string) bool { return strings.Contains(address, w) })
}

// docHits are where names hold each word (a name equal to it, else the
// first holding it), and whether every word was found.
func docHits(names []docName, words []string) ([]Hit, bool) {
	var hits []Hit
	for _, w := range words {
		i := slices.IndexFunc(names, func(n docName) bool { return n.name == w })
		if i < 0 {
			i = slices.IndexFunc(names, func(n docName) bool { return strings.Contains(n.name, w) })
		}
		if i < 0 {
			return nil, false
		}
		hits = append(hits, Hit{Where: names[i].where, Text: names[i].name})
	}
	return hits, true
}

// providerDocNames are the resources and data sources the documentation
// of p's newest served version lists; none when it has none, carries no
// documentation or its documentation cannot be parsed (it is then found
// by its address only).
func (h *Handlers) providerDocNames(ctx context.Context, p names.Provider) ([]docName, error) {
	_, served, err := h.providerVersions(ctx, p)
	if source.Absent(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v, ok := newestOf(served)
	if !ok {
		return nil, nil
	}
	root, err := source.ResolveHeldProvider(ctx, h.Providers, p, v, via)
	if source.Absent(err) || err == nil && root.Root == nil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return searchedDocNames(ctx, root.Root, p.Type)
}

// searchedDocNames are the names the documentation stored for the
// release at root lists, of a provider of type typ: kept in the
// catalogue search's own cache by the index's digest
// (store.Repo.Summarised, as a module's searched interface), so a warm
// search reads nothing however many pages were viewed since.
func searchedDocNames(ctx context.Context, root *source.Root, typ string) ([]docName, error) {
	v, err := root.Repo.Summarised(ctx, "the provider's searched documentation names", root.Digest, func(ctx context.Context, repo oci.ReadOnlyRepository, _ string) (any, int64, error) {
		docs, _, err := providerdocs.Read(ctx, repo, root.Digest)
		if errors.Is(err, providerdocs.ErrNoDocs) || errors.Is(err, providerdocs.ErrBadDocs) {
			return []docName{}, 0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		out, size := docNamesOf(docs, typ)
		return out, size, nil
	})
	if err != nil {
		return nil, err
	}
	out, _ := v.([]docName)
	return out, nil
}

// docNamesOf are the resources and data sources docs list, of a
// provider of type typ (lower case: TYPE_slug, or the slug when it
// names its type already), and about what they hold in memory.
func docNamesOf(docs *providerdocs.Docs, typ string) ([]docName, int64) {
	out := []docName{}
	size := int64(0)
	for _, p := range docs.Pages {
		where, ok := docNameCategories[p.Category]
		if !ok {
			continue
		}
		name := strings.ToLower(p.Slug)
		if !strings.HasPrefix(name, typ+"_") {
			name = typ + "_" + name
		}
		out = append(out, docName{where: where, name: name})
		size += int64(len(name) + 48)
	}
	return out, size
}
