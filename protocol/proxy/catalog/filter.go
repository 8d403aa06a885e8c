package catalog

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Filters narrow the index, with ?q= and ?kind= (all of them apply):
//
//   - namespace: the module's or the provider's namespace (case folded);
//   - provider: modules whose newest served version's root module
//     requires that provider (an address as tofu reads it in a source:
//     hashicorp/aws is registry.opentofu.org/hashicorp/aws), and the
//     provider of that address;
//   - status: the status of the newest version held (the newest
//     release, else the newest pre-release; denied ones included), as
//     the module's or the provider's page lists it: served,
//     deprecated or denied.
//
// They are applied to what the caller may read only, after the scope
// filter (readable), so that nothing out of scope is counted.
type Filters struct {
	Namespace string
	Provider  *names.Provider
	Status    string
}

// set reports whether some filter is set.
func (f Filters) set() bool { return f.Namespace != "" || f.Provider != nil || f.Status != "" }

// indexFilters reads ?namespace=, ?provider= and ?status=.
func indexFilters(r *http.Request) (Filters, error) {
	v := r.URL.Query()
	var f Filters
	if ns := strings.ToLower(strings.TrimSpace(v.Get("namespace"))); ns != "" {
		if len(ns) > maxQuery || strings.ContainsAny(ns, "/ ") {
			return Filters{}, respond.BadPath("namespace %q: want one namespace", clipText(ns))
		}
		f.Namespace = ns
	}
	if s := strings.TrimSpace(v.Get("provider")); s != "" {
		p, err := names.ParseProvider(s)
		if err != nil {
			return Filters{}, respond.BadPath("provider %q: %v", clipText(s), err)
		}
		f.Provider = &p
	}
	switch s := v.Get("status"); s {
	case "", StatusServed, StatusDeprecated, StatusDenied:
		f.Status = s
	default:
		return Filters{}, respond.BadPath("status %q: want served, deprecated or denied", clipText(s))
	}
	return f, nil
}

// echo sets d's fields that say which filters applied.
func (f Filters) echo(d *IndexPage) {
	d.Namespace, d.Status = f.Namespace, f.Status
	if f.Provider != nil {
		d.Provider = f.Provider.String()
	}
}

// filterModules are the modules of all (in the caller's scope already)
// that f keeps, in order.
func (h *Handlers) filterModules(ctx context.Context, all []source.ModuleAddress, f Filters) ([]source.ModuleAddress, error) {
	if !f.set() {
		return all, nil
	}
	keep := make([]bool, len(all))
	err := h.Out.Store.Each(ctx, len(all), func(ctx context.Context, i int) error {
		ok, err := h.moduleKept(ctx, all[i], f)
		keep[i] = ok // each index by one goroutine
		return err
	})
	if err != nil {
		return nil, err
	}
	return kept(all, keep), nil
}

// moduleKept reports whether f keeps a.
func (h *Handlers) moduleKept(ctx context.Context, a source.ModuleAddress, f Filters) (bool, error) {
	if f.Namespace != "" && !strings.EqualFold(a.Module.Namespace, f.Namespace) {
		return false, nil
	}
	if f.Provider != nil {
		st, _, err := h.searchable(ctx, a)
		if err != nil || st == nil || !slices.Contains(st.providers, *f.Provider) {
			return false, err
		}
	}
	if f.Status != "" {
		s, err := h.newestModuleStatus(ctx, a)
		if err != nil || s != f.Status {
			return false, err
		}
	}
	return true, nil
}

// newestModuleStatus is the status of a's newest version held, denied
// ones included; "" when it has none.
func (h *Handlers) newestModuleStatus(ctx context.Context, a source.ModuleAddress) (string, error) {
	l, err := h.Modules.ModuleVersions(ctx, a)
	if source.Absent(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	vs := make(names.VersionList, 0, len(l.Versions)+len(l.Denied))
	for _, e := range l.Versions {
		vs = append(vs, e.Version)
	}
	v, ok := newestOf(append(vs, l.Denied...))
	if !ok {
		return "", nil
	}
	s, err := h.status(ctx, a, v, l)
	return s.Status, err
}

// filterProviders are the providers of all (in the caller's scope
// already) matching q (foundProviders, best first, with why) that f
// keeps.
func (h *Handlers) filterProviders(ctx context.Context, all []names.Provider, q string, f Filters) ([]names.Provider, map[names.Provider][]Hit, error) {
	all = slices.DeleteFunc(slices.Clone(all), func(p names.Provider) bool {
		return f.Namespace != "" && p.Namespace != f.Namespace || f.Provider != nil && p != *f.Provider
	})
	all, hits, err := h.foundProviders(ctx, all, q)
	if err != nil || f.Status == "" {
		return all, hits, err
	}
	keep := make([]bool, len(all))
	err = h.Out.Store.Each(ctx, len(all), func(ctx context.Context, i int) error {
		statuses, _, err := h.providerVersions(ctx, all[i])
		if source.Absent(err) {
			return nil
		}
		keep[i] = newestStatus(statuses) == f.Status // each index by one goroutine
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return kept(all, keep), hits, nil
}

// newestStatus is the status of the newest version of statuses (the
// newest release, else the newest pre-release); "" for none.
func newestStatus(statuses []VersionStatus) string {
	vs := make(names.VersionList, 0, len(statuses))
	by := map[string]string{}
	for _, s := range statuses {
		if v, err := names.ParseVersion(s.Version); err == nil {
			vs = append(vs, v)
			by[v.String()] = s.Status
		}
	}
	v, ok := newestOf(vs)
	if !ok {
		return ""
	}
	return by[v.String()]
}

// kept are the elements of all whose keep is true, in order.
func kept[T any](all []T, keep []bool) []T {
	var out []T
	for i, a := range all {
		if keep[i] {
			out = append(out, a)
		}
	}
	return out
}
