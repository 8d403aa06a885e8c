package catalog

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog/readme"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// ModulePage is a module version's page: its versions and their status,
// how to use it, and the interface of the module shown (the root module,
// a submodule or an example).
type ModulePage struct {
	Address   string `json:"address"`
	Host      string `json:"host"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	System    string `json:"system"`
	Version   string `json:"version"`
	// Latest is the newest version served.
	Latest   string          `json:"latest"`
	Versions []VersionStatus `json:"versions"`
	// Repository and Manifest are where the package is stored.
	Repository string `json:"repository"`
	Manifest   string `json:"manifest"`
	// Interface says how the interface was had: HowStored (beside the
	// package) or HowExtracted (now, from the package: another tool
	// pushed it).
	Interface string `json:"interface"`
	// Dir is the module shown: "" for the root module, "modules/DIR" or
	// "examples/DIR".
	Dir        string            `json:"dir"`
	Module     *moduledoc.Module `json:"module"`
	Submodules []DirLink         `json:"submodules"`
	Examples   []DirLink         `json:"examples"`
	// Usage is how to call it (none for an example: it is a root module
	// that calls the package).
	Usage *Usage `json:"usage,omitempty"`
	// README is the module's README (nil without one).
	README *README `json:"readme,omitempty"`
	// Downloads are the package's downloads and its version's, shown
	// only to a caller that reads everything (nil otherwise).
	Downloads *UsageCounts `json:"downloads"`
	// Diagnostics are the package's own (limits met while reading it).
	Diagnostics []moduledoc.Diagnostic `json:"diagnostics"`
	// Base leads back to the catalogue's index from this page.
	Base string `json:"-"`
}

// VersionStatus is a version and what the policy says of it.
type VersionStatus struct {
	Version string `json:"version"`
	// Status is "served", "deprecated" (served, with Message),
	// "warned" (a provider's: served, clients warned of its known
	// vulnerabilities, Message), "denied" or "revoked" (a provider's:
	// denied by a revoked block, Message its message), both with Rule
	// and Reason.
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
	Rule    string `json:"rule,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Warning is what clients are warned of a provider version served
	// (its known vulnerabilities), deprecated or not.
	Warning string `json:"warning,omitempty"`
}

// Version statuses.
const (
	StatusServed     = "served"
	StatusDeprecated = "deprecated"
	StatusDenied     = "denied"
	StatusWarned     = "warned"
	StatusRevoked    = "revoked"
)

// DirLink is a submodule or an example.
type DirLink struct {
	Dir string `json:"dir"`
	// Name is the directory's own name.
	Name string `json:"name"`
	URL  string `json:"url"`
}

// README is a module's README: the Markdown as stored and, on the page,
// rendered safely (readme.Render).
type README struct {
	Path      string        `json:"path"`
	Markdown  string        `json:"markdown"`
	Truncated bool          `json:"truncated"`
	HTML      template.HTML `json:"-"`
}

func (h *Handlers) serveModule(w http.ResponseWriter, r *http.Request, req Request) {
	d, err := h.modulePage(r.Context(), req, h.addresserOf(r))
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	write(h, w, r, d, h.RenderModule)
}

// modulePage builds req's page.
func (h *Handlers) modulePage(ctx context.Context, req Request, ad addresser) (ModulePage, error) {
	a := req.Address
	statuses, served, err := h.versions(ctx, a)
	if err != nil {
		return ModulePage{}, err
	}
	latest, ok := newestOf(served)
	if !ok {
		return ModulePage{}, source.NotFoundf("module %s has no version served here", a.Module)
	}
	v := latest
	if req.Version != nil {
		v = *req.Version
	}
	rel, err := h.Modules.ModuleRelease(ctx, a, v)
	if err != nil {
		return ModulePage{}, err
	}
	if rel.Root == nil {
		return ModulePage{}, source.NotFoundf("module %s %s is not stored yet", a.Module, v)
	}
	doc, how, err := h.Docs.ModuleDoc(ctx, *rel.Root)
	if err != nil {
		return ModulePage{}, err
	}
	d := ModulePage{Address: ad.address(a), Host: a.Host, Namespace: a.Module.Namespace, Name: a.Module.Name, System: a.Module.System,
		Version: v.String(), Latest: latest.String(), Versions: statuses, Repository: rel.Root.Repo.Name(), Manifest: rel.Root.Digest.String(),
		Interface: how, Dir: req.Dir, Diagnostics: nonNil(doc.Package.Diagnostics), Base: backToIndex(req)}
	if d.Module = moduleIn(doc, req.Dir); d.Module == nil {
		return ModulePage{}, source.NotFoundf("module %s %s has no directory %s", a.Module, v, req.Dir)
	}
	d.Submodules, d.Examples = dirLinks(doc.Package.Submodules, d.Base, a, v), dirLinks(doc.Package.Examples, d.Base, a, v)
	if !strings.HasPrefix(req.Dir, "examples/") {
		d.Usage = usageOf(a, d.Address, v, served, d.Repository, req.Dir, d.Module)
		if rel.Root.Repo.Reference().Layout {
			d.Usage.OCI = "" // oci:// reads registries, not layout directories
		}
	}
	d.README = readmeOf(doc, d.Module, d.Base, a, v)
	d.Downloads, err = h.downloads(ctx, names.KindModule, a.String(), d.Version)
	return d, err
}

// versions are a's versions, newest first, with their status, and those
// served.
func (h *Handlers) versions(ctx context.Context, a source.ModuleAddress) ([]VersionStatus, names.VersionList, error) {
	l, err := h.Modules.ModuleVersions(ctx, a)
	if err != nil {
		return nil, nil, err
	}
	vs := make(names.VersionList, 0, len(l.Versions)+len(l.Denied))
	for _, e := range l.Versions {
		vs = append(vs, e.Version)
	}
	vs = append(vs, l.Denied...)
	vs.Sort()
	statuses := make([]VersionStatus, len(vs))
	err = h.Out.Store.Each(ctx, len(vs), func(ctx context.Context, i int) error {
		s, err := h.status(ctx, a, vs[i], l)
		statuses[i] = s // each index by one goroutine
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var out []VersionStatus
	var served names.VersionList
	for i := len(statuses) - 1; i >= 0; i-- {
		if statuses[i].Status == "" {
			continue // not a module package: left out, as the protocol leaves it out
		}
		out = append(out, statuses[i])
		if statuses[i].Status != StatusDenied {
			served = append(served, vs[i])
		}
	}
	return out, served, nil
}

// status is what the policy says of version v of a: denied when the
// listing left it out or reading it is refused (with the rule and reason
// its download is refused with), deprecated, served, or "" when it is
// not a module package.
func (h *Handlers) status(ctx context.Context, a source.ModuleAddress, v names.Version, l source.ModuleListing) (VersionStatus, error) {
	s := VersionStatus{Version: v.String()}
	_, err := h.Modules.ModuleRelease(ctx, a, v) // the policy judges first: nothing is read for a version it denies
	var denied *source.Denied
	switch {
	case errors.As(err, &denied):
		s.Status, s.Rule, s.Reason = StatusDenied, denied.Rule, denied.Reason
		if s.Reason == "" {
			s.Reason = denied.Msg
		}
		return s, nil
	case slices.ContainsFunc(l.Denied, v.Same):
		s.Status, s.Reason = StatusDenied, "denied by the policy"
		return s, nil
	case err != nil: // "" for no module package (absent, or an artifact that is none), as the protocol leaves it out
		return s, h.Out.LeftOut("module "+a.String(), v, err)
	}
	s.Status = StatusServed
	s.Rule, s.Reason = h.allowedBy(names.KindModule, a.String(), v)
	if msg, ok := l.Deprecated[v.String()]; ok {
		s.Status, s.Message = StatusDeprecated, msg
	}
	return s, nil
}

// moduleIn is the module of doc in dir ("": the root module), or nil.
func moduleIn(doc *moduledoc.Doc, dir string) *moduledoc.Module {
	if dir == "" {
		return &doc.Package.Root
	}
	for _, ms := range [][]moduledoc.Module{doc.Package.Submodules, doc.Package.Examples} {
		for i := range ms {
			if ms[i].Path == dir {
				return &ms[i]
			}
		}
	}
	return nil
}

// dirLinks are the links to modules' pages (relative to base, the index).
func dirLinks(ms []moduledoc.Module, base string, a source.ModuleAddress, v names.Version) []DirLink {
	out := make([]DirLink, len(ms))
	for i, m := range ms {
		_, name, _ := strings.Cut(m.Path, "/")
		out[i] = DirLink{Dir: m.Path, Name: name, URL: base + dirPath(a, v, m.Path)}
	}
	return out
}

// dirPath is a module directory's page, relative to the index.
func dirPath(a source.ModuleAddress, v names.Version, dir string) string {
	p := strings.TrimPrefix(ModulePath(a, &v), "catalog/")
	if dir != "" {
		p += "/" + dir
	}
	return p
}

// backToIndex is the relative URL of the index from req's page.
func backToIndex(req Request) string {
	depth := 5 // modules/HOST/NAMESPACE/NAME/SYSTEM
	if req.Version != nil {
		depth++
	}
	if req.Dir != "" {
		depth += 2
	}
	return strings.Repeat("../", depth-1)
}

// readmeOf is m's README, rendered with links to the pages of the
// package's modules.
func readmeOf(doc *moduledoc.Doc, m *moduledoc.Module, base string, a source.ModuleAddress, v names.Version) *README {
	if m.README == "" {
		return nil
	}
	for _, rd := range doc.READMEs {
		if rd.Path != m.README {
			continue
		}
		dirs := map[string]bool{"": true}
		for _, sub := range append(append([]moduledoc.Module{}, doc.Package.Submodules...), doc.Package.Examples...) {
			dirs[sub.Path] = true
		}
		link := func(p string) string {
			if dirs[p] {
				return base + dirPath(a, v, p)
			}
			return ""
		}
		html := readme.Render([]byte(rd.Text), readme.Options{Dir: m.Path, Link: link, Image: func(string) string { return "" }})
		return &README{Path: rd.Path, Markdown: rd.Text, Truncated: rd.Truncated, HTML: html}
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
