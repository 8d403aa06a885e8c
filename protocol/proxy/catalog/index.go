package catalog

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// PageSize is how many modules one index page lists.
const PageSize = 50

// maxQuery bounds the search text.
const maxQuery = 256

// IndexPage is the list of modules held that the caller may read, those
// matching Query, one page of them.
type IndexPage struct {
	Query   string        `json:"query"`
	Modules []ModuleEntry `json:"modules"`
	// Total is how many modules match (in the caller's scope); Page is
	// this page's number from 1, Pages how many there are.
	Total int `json:"total"`
	Page  int `json:"page"`
	Pages int `json:"pages"`
	// Complete is false when some mapping's repositories could not all
	// be listed; Coverage says which and why, to a caller that reads
	// everything only (the mappings are the operator's).
	Complete bool       `json:"complete"`
	Coverage []Coverage `json:"coverage"`
	// Kind is the ?kind= asked ("" for both, KindModule, KindProvider).
	Kind string `json:"kind"`
	// Providers are the providers held matching Query, page Page of them
	// (PageSize each, as modules are; Pages counts the longer list), and
	// ProviderTotal how many match.
	Providers     []ProviderEntry `json:"providers"`
	ProviderTotal int             `json:"provider_total"`
	// Namespace, Provider (normalised: HOST/NAMESPACE/TYPE) and Status
	// are the filters asked (Filters), "" for none.
	Namespace string `json:"namespace"`
	Provider  string `json:"provider"`
	Status    string `json:"status"`
	// Tofu is the OpenTofu releases' entry, when they are served and
	// listed (kind "" or KindTofu, within the caller's scope, matching).
	Tofu *TofuEntry `json:"tofu,omitempty"`
}

// ModuleEntry is one module in the index.
type ModuleEntry struct {
	// Address is HOST/NAMESPACE/NAME/SYSTEM, as clients write it (the
	// host they reach the proxy by, its port included); Host is the
	// registry hostname the proxy knows it under (no port), as the
	// page's URL names it.
	Address   string `json:"address"`
	Host      string `json:"host"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	System    string `json:"system"`
	// URL is the module's page, relative to the index.
	URL string `json:"url"`
	// Latest is the newest version served ("" when none is).
	Latest string `json:"latest"`
	// Versions is how many versions are served.
	Versions int `json:"versions"`
	// Hits say where a search found its words outside the address.
	Hits []Hit `json:"hits,omitempty"`
}

func (h *Handlers) serveIndex(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	host, _ := OwnHost(ctx)
	q, page, err := indexQuery(r)
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	kind, err := indexKind(r)
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	f, err := indexFilters(r)
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	held, err := h.Held(ctx, host)
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	if kind != "" && kind != KindModule {
		held.Modules = nil
	}
	if kind != "" && kind != KindProvider {
		held.Providers = nil
	}
	visible, err := h.inScope(ctx, sorted(held.Modules))
	if err == nil {
		visible, err = h.filterModules(ctx, visible, f)
	}
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	visible, hits, err := h.found(ctx, visible, q)
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	d := IndexPage{Query: q, Total: len(visible), Page: page, Pages: (len(visible) + PageSize - 1) / PageSize, Complete: true, Coverage: []Coverage{}}
	for _, c := range held.Coverage {
		d.Complete = d.Complete && c.Listed
	}
	if respond.ReaderOf(ctx) == nil {
		d.Coverage = append(d.Coverage, held.Coverage...)
	}
	shown, ad := pageOf(visible, page), h.addresserOf(r)
	d.Modules = make([]ModuleEntry, len(shown))
	err = h.Out.Store.Each(ctx, len(shown), func(ctx context.Context, i int) error {
		e, err := h.entry(ctx, ad, shown[i])
		e.Hits = hits[shown[i]]
		d.Modules[i] = e
		return err
	})
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	d.Kind = kind
	f.echo(&d)
	if err := h.listProviders(ctx, &d, held.Providers, q, f, page); err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	if kind == "" || kind == KindTofu {
		if d.Tofu, err = h.tofuEntry(ctx, q, f); err != nil {
			h.Out.Fail(w, r, err)
			return
		}
	}
	write(h, w, r, d, h.RenderIndex)
}

// The kinds ?kind= narrows the index to.
const (
	KindModule   = "module"
	KindProvider = "provider"
	KindTofu     = "tofu"
)

// indexKind reads ?kind=: "" (every kind), KindModule, KindProvider or
// KindTofu.
func indexKind(r *http.Request) (string, error) {
	switch k := r.URL.Query().Get("kind"); k {
	case "", KindModule, KindProvider, KindTofu:
		return k, nil
	default:
		return "", respond.BadPath("kind %q: want module, provider or tofu", clipText(k))
	}
}

// indexQuery reads ?q= and ?page=.
func indexQuery(r *http.Request) (string, int, error) {
	v := r.URL.Query()
	q := strings.TrimSpace(v.Get("q"))
	if len(q) > maxQuery {
		return "", 0, respond.BadPath("the search text is longer than %d bytes", maxQuery)
	}
	page := 1
	if p := v.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 1_000_000 {
			return "", 0, respond.BadPath("page %q: want a number from 1", p)
		}
		page = n
	}
	return q, page, nil
}

// sorted are the addresses in address order, without duplicates.
func sorted(all []source.ModuleAddress) []source.ModuleAddress {
	out := slices.Clone(all)
	slices.SortFunc(out, func(a, b source.ModuleAddress) int { return strings.Compare(a.String(), b.String()) })
	return slices.CompactFunc(out, func(a, b source.ModuleAddress) bool { return a == b })
}

// found are the addresses matching every word of q (case folded), best
// first (rank), with why each matched; all of them, in order, for an
// empty q.
func (h *Handlers) found(ctx context.Context, all []source.ModuleAddress, q string) ([]source.ModuleAddress, map[source.ModuleAddress][]Hit, error) {
	words := strings.Fields(strings.ToLower(q))
	if len(words) == 0 {
		return all, nil, nil
	}
	ranks := make([]int, len(all))
	hits := make([][]Hit, len(all))
	err := h.Out.Store.Each(ctx, len(all), func(ctx context.Context, i int) error {
		if r, _ := rank(all[i], nil, q, words); r != rankNone {
			ranks[i] = r // each index by one goroutine; nothing in the interface ranks higher
			return nil
		}
		st, _, err := h.searchable(ctx, all[i])
		ranks[i], hits[i] = rank(all[i], st, q, words)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	order := make([]int, 0, len(all))
	for i := range all {
		if ranks[i] != rankNone {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(i, j int) int { return ranks[i] - ranks[j] })
	out := make([]source.ModuleAddress, len(order))
	why := map[source.ModuleAddress][]Hit{}
	for k, i := range order {
		out[k] = all[i]
		if len(hits[i]) > 0 {
			why[all[i]] = hits[i]
		}
	}
	return out, why, nil
}

// inScope are the addresses the request's client may read (all of them
// for a client reading everything), in order. Asking fails only when the
// scope cannot be decided (a registry failing).
func (h *Handlers) inScope(ctx context.Context, all []source.ModuleAddress) ([]source.ModuleAddress, error) {
	return readable(ctx, h, names.KindModule, all)
}

// readable are the addresses of kind in all the request's client may
// read (all of them for a client reading everything), in order.
func readable[T fmt.Stringer](ctx context.Context, h *Handlers, kind names.Kind, all []T) ([]T, error) {
	c := respond.ReaderOf(ctx)
	if c == nil {
		return all, nil
	}
	keep := make([]bool, len(all))
	reads := func(ctx context.Context, i int) error {
		err := c.Reads(ctx, kind, all[i].String())
		if source.Absent(err) {
			return nil
		}
		keep[i] = err == nil // each index by one goroutine
		return err
	}
	if len(all) == 0 {
		return nil, nil
	}
	// One first, alone: a credential someone else checks (the registry's)
	// is then accepted or refused before the rest are asked at once, so
	// that they spend the bounds of a known credential, and a refused one
	// costs one check, not one per address (respond.Vouched).
	if err := reads(ctx, 0); err != nil {
		return nil, err
	}
	if v, ok := c.(respond.Vouched); ok && !keep[0] && !v.Vouched() {
		return nil, nil
	}
	err := h.Out.Store.Each(ctx, len(all)-1, func(ctx context.Context, i int) error { return reads(ctx, i+1) })
	if err != nil {
		return nil, err
	}
	var out []T
	for i, a := range all {
		if keep[i] {
			out = append(out, a)
		}
	}
	return out, nil
}

// pageOf is page n (from 1) of all.
func pageOf[T any](all []T, n int) []T {
	lo := (n - 1) * PageSize
	if lo >= len(all) {
		return nil
	}
	return all[lo:min(lo+PageSize, len(all))]
}

// entry is a's index entry: its newest version served. A module whose
// versions cannot be listed (none is a module package, every one is
// denied) is listed without versions.
func (h *Handlers) entry(ctx context.Context, ad addresser, a source.ModuleAddress) (ModuleEntry, error) {
	e := ModuleEntry{Address: ad.address(a), Host: a.Host, Namespace: a.Module.Namespace, Name: a.Module.Name, System: a.Module.System,
		URL: "modules/" + a.Host + "/" + a.Module.String()}
	l, err := h.Modules.ModuleVersions(ctx, a)
	if source.Absent(err) {
		return e, nil
	}
	if err != nil {
		return e, err
	}
	vs := make(names.VersionList, len(l.Versions))
	for i, v := range l.Versions {
		vs[i] = v.Version
	}
	e.Versions = len(vs)
	newest, ok, err := h.newestPackage(ctx, a, vs)
	if ok {
		e.Latest = newest.String()
	}
	return e, err
}

// maxLatestTries bounds the versions an index entry reads, newest first,
// to find the newest that is a module package.
const maxLatestTries = 4

// newestPackage is the newest of vs (as newestOf chooses) whose tag
// names a module package the gate admits, as the module's page and the
// protocol serve it: a tag holding another artifact, or whose facts or
// attestations are refused, is passed over (at most maxLatestTries are
// read).
func (h *Handlers) newestPackage(ctx context.Context, a source.ModuleAddress, vs names.VersionList) (names.Version, bool, error) {
	vs = slices.Clone(vs)
	for range maxLatestTries {
		v, ok := newestOf(vs)
		if !ok {
			return names.Version{}, false, nil
		}
		rel, err := h.Modules.ModuleRelease(ctx, a, v)
		if err == nil && rel.Root != nil {
			return v, true, nil
		}
		if err := h.Out.LeftOut("module "+a.String(), v, err); err != nil {
			return names.Version{}, false, err
		}
		vs = slices.DeleteFunc(vs, v.Same)
	}
	return names.Version{}, false, nil
}

// newestOf is the newest release in vs, or the newest pre-release when
// there is no release.
func newestOf(vs names.VersionList) (names.Version, bool) {
	return newest(len(vs), func(i int) *names.Version { return &vs[i] })
}

// newestListed is newestOf the versions of ls.
func newestListed(ls []source.Listed) (names.Version, bool) {
	return newest(len(ls), func(i int) *names.Version { return &ls[i].Version })
}

// newest is newestOf the n versions at(i) gives.
func newest(n int, at func(i int) *names.Version) (names.Version, bool) {
	if n == 0 {
		return names.Version{}, false
	}
	var newest, newestPre *names.Version
	for i := range n {
		v := at(i)
		if v.Prerelease == "" && (newest == nil || v.GreaterThan(*newest)) {
			newest = v
		}
		if newestPre == nil || v.GreaterThan(*newestPre) {
			newestPre = v
		}
	}
	if newest != nil {
		return *newest, true
	}
	return *newestPre, true
}
