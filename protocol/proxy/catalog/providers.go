package catalog

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Providers in the catalogue: the index's entries and a provider's page,
// read through the catalogue's provider source (the protocols' mappings
// and policy, nothing pulled through), scoped as modules are.

// via is the protocol the catalogue's reads are judged as.
const via = names.ViaRegistry

// ProviderEntry is one provider in the index.
type ProviderEntry struct {
	// Address is HOST/NAMESPACE/TYPE.
	Address   string `json:"address"`
	Host      string `json:"host"`
	Namespace string `json:"namespace"`
	Type      string `json:"type"`
	// URL is the provider's page, relative to the index.
	URL string `json:"url"`
	// Latest is the newest version served ("" when none is); Versions
	// how many are served.
	Latest   string `json:"latest"`
	Versions int    `json:"versions"`
	// Hits say where a search found its words outside the address: a
	// resource or data source its documentation lists.
	Hits []Hit `json:"hits,omitempty"`
}

// ProviderPage is a provider version's page.
type ProviderPage struct {
	Address   string          `json:"address"`
	Host      string          `json:"host"`
	Namespace string          `json:"namespace"`
	Type      string          `json:"type"`
	Version   string          `json:"version"`
	Latest    string          `json:"latest"`
	Versions  []VersionStatus `json:"versions"`
	// Platforms and Protocols of the version shown; SigningKeyIDs the
	// publisher keys its push verified (none: not signed by its
	// publisher, or its provenance says nothing).
	Platforms     []string `json:"platforms"`
	Protocols     []string `json:"protocols"`
	SigningKeyIDs []string `json:"signing_key_ids"`
	Repository    string   `json:"repository"`
	Index         string   `json:"index"`
	// Packages are the platforms' packages (document.go).
	Packages []PackageFacts `json:"packages"`
	// SBOM is the version's SBOM page, relative to this page.
	SBOM string `json:"sbom"`
	// Usage is a required_providers entry; Lock the provider block of
	// .terraform.lock.hcl oci-tofu lock writes for it and LockPlatforms
	// (?platform=, all by default); LockProblem why there is none.
	Usage         string   `json:"usage"`
	Lock          string   `json:"lock"`
	LockPlatforms []string `json:"lock_platforms"`
	LockProblem   string   `json:"lock_problem,omitempty"`
	// Status is the policy's word on the version shown (its entry of
	// Versions).
	Status VersionStatus `json:"status"`
	// Signer is who signed it; Attestation the attestation rule's word
	// (nil: serve has none); SBOMs its SBOMs and their known
	// vulnerabilities; Downloads its address's downloads, shown only to
	// a caller reading everything (nil otherwise, or when not counted).
	Signer      Signer       `json:"signer"`
	Attestation *Admission   `json:"attestation"`
	SBOMs       SBOMFacts    `json:"sboms"`
	Downloads   *UsageCounts `json:"downloads"`
	// Artifacts are the attestations, signatures and other artifacts
	// stored for the index (provider_referrers.go).
	Artifacts StoredArtifacts `json:"stored_artifacts"`
	Base      string          `json:"-"`
	// Docs is the release's documentation (provider_docs.go).
	Docs ProviderDocs `json:"docs"`
	docs storedDocs
}

// listProviders adds the providers of all in the caller's scope matching
// q and f to d, best first, page page of them.
func (h *Handlers) listProviders(ctx context.Context, d *IndexPage, all []names.Provider, q string, f Filters, page int) error {
	d.Providers = []ProviderEntry{}
	if h.Providers == nil {
		return nil
	}
	all = slices.Clone(all)
	slices.SortFunc(all, func(a, b names.Provider) int { return strings.Compare(a.String(), b.String()) })
	all = slices.Compact(all)
	visible, err := h.providersInScope(ctx, all)
	var hits map[names.Provider][]Hit
	if err == nil {
		visible, hits, err = h.filterProviders(ctx, visible, q, f)
	}
	if err != nil {
		return err
	}
	d.ProviderTotal = len(visible)
	d.Pages = max(d.Pages, (len(visible)+PageSize-1)/PageSize)
	shown := pageOf(visible, page)
	d.Providers = make([]ProviderEntry, len(shown))
	return h.Out.Store.Each(ctx, len(shown), func(ctx context.Context, i int) error {
		p := shown[i]
		e := ProviderEntry{Address: p.String(), Host: p.Hostname, Namespace: p.Namespace, Type: p.Type, URL: "providers/" + p.String(), Hits: hits[p]}
		_, served, err := h.providerVersions(ctx, p)
		if err == nil {
			e.Versions = len(served)
			if v, ok := newestOf(served); ok {
				e.Latest = v.String()
			}
		}
		d.Providers[i] = e // each index by one goroutine
		if source.Absent(err) {
			return nil
		}
		return err
	})
}

// providersInScope are the providers of all the caller may read.
func (h *Handlers) providersInScope(ctx context.Context, all []names.Provider) ([]names.Provider, error) {
	return readable(ctx, h, names.KindProvider, all)
}

// providerVersions are p's versions, newest first, with their status
// under the policy (the listing's Left and Deprecated, read with the
// summaries the registry protocol reads), and those served.
func (h *Handlers) providerVersions(ctx context.Context, p names.Provider) ([]VersionStatus, names.VersionList, error) {
	l, err := h.Providers.ProviderVersions(ctx, p, via, source.ListOptions{Need: source.NeedSummary})
	if err != nil {
		return nil, nil, err
	}
	vs := make(names.VersionList, 0, len(l.Versions))
	for _, e := range l.Versions {
		vs = append(vs, e.Version)
	}
	vs.Sort()
	var out []VersionStatus
	var served names.VersionList
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i].String()
		s := VersionStatus{Version: v, Status: StatusServed}
		var denied *source.Denied
		switch left := l.Left[v]; {
		case l.Unresolvable[v] != "":
			continue
		case errors.As(left, &denied):
			s.Status, s.Rule, s.Reason = StatusDenied, denied.Rule, denied.Reason
			if s.Reason == "" {
				s.Reason = denied.Msg
			}
			if msg, ok := h.revocation(p, vs[i], denied); ok {
				s.Status, s.Message = StatusRevoked, msg
			}
		case left != nil:
			continue // not a provider release: left out, as the protocols leave it out
		default:
			s.Rule, s.Reason = h.allowedBy(names.KindProvider, p.String(), vs[i])
			s.Warning = l.Vulnerable[v]
			if msg, ok := l.Deprecated[v]; ok {
				s.Status, s.Message = StatusDeprecated, msg
			} else if s.Warning != "" {
				s.Status, s.Message = StatusWarned, s.Warning
			}
			served = append(served, vs[i])
		}
		out = append(out, s)
	}
	return out, served, nil
}

func (h *Handlers) serveProviderPage(w http.ResponseWriter, r *http.Request, req Request) {
	if h.Providers == nil {
		respond.WriteError(w, r, http.StatusBadRequest, "this server maps no providers: want modules/HOST/NAMESPACE/NAME/SYSTEM[/VERSION]")
		return
	}
	if c := respond.ReaderOf(r.Context()); c != nil && !h.Out.InScope(w, r, c, names.KindProvider, req.Provider.String()) {
		return
	}
	if err := h.heldUnder(r.Context(), *req.Provider); err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	if req.Doc != nil {
		h.serveProviderDoc(w, r, req)
		return
	}
	d, err := h.providerPage(r.Context(), req, r.URL.Query()["platform"])
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	write(h, w, r, d, h.RenderProvider)
}

// providerPage builds req's page, its lock block for platforms (all
// when none).
func (h *Handlers) providerPage(ctx context.Context, req Request, platforms []string) (ProviderPage, error) {
	p := *req.Provider
	statuses, served, err := h.providerVersions(ctx, p)
	if err != nil {
		return ProviderPage{}, err
	}
	latest, ok := newestOf(served)
	if !ok {
		return ProviderPage{}, source.NotFoundf("provider %s has no version served here", p)
	}
	v := latest
	if req.Version != nil {
		v = *req.Version
	}
	root, err := source.ResolveHeldProvider(ctx, h.Providers, p, v, via)
	if err != nil {
		return ProviderPage{}, err
	}
	if root.Root == nil {
		return ProviderPage{}, source.NotFoundf("provider %s %s is not stored yet", p, v)
	}
	rel, err := h.Providers.ReadProvider(ctx, root, source.NeedSummary)
	if err != nil {
		return ProviderPage{}, err
	}
	base := strings.Repeat("../", 3) // providers/HOST/NAMESPACE/TYPE
	if req.Version != nil {
		base += "../"
	}
	d := ProviderPage{Address: p.String(), Host: p.Hostname, Namespace: p.Namespace, Type: p.Type, Version: v.String(), Latest: latest.String(),
		Versions: statuses, Protocols: nonNil(rel.Protocols), SigningKeyIDs: nonNil(rel.SigningKeyIDs), Platforms: []string{},
		Repository: root.Root.Repo.Name(), Index: root.Root.Digest.String(), Base: base}
	for _, pl := range rel.Platforms {
		d.Platforms = append(d.Platforms, pl.String())
	}
	if d.Packages, err = h.packageFacts(ctx, root, rel.Platforms); err != nil {
		return ProviderPage{}, err
	}
	d.docs, d.Docs = docsOf(ctx, root.Root, base, d.Address, d.Version)
	if h.SBOMPath != nil {
		d.SBOM = base + "../" + strings.TrimPrefix(h.SBOMPath(p.String(), v.String()), "/")
	}
	c := constraintFor(v, nil)
	d.Usage = "terraform {\n  required_providers {\n    " + blockLabel(p.Type) + " = {\n      source  = \"" + p.String() + "\"\n      version = \"" + c + "\"\n    }\n  }\n}\n"
	lock, err := lockPlatforms(rel.Platforms, platforms)
	if err != nil {
		return ProviderPage{}, err
	}
	for _, pl := range lock {
		d.LockPlatforms = append(d.LockPlatforms, pl.String())
	}
	for _, s := range statuses {
		if s.Version == d.Version {
			d.Status = s
		}
	}
	if err := h.releaseFacts(ctx, &d, *root.Root, rel); err != nil {
		return ProviderPage{}, err
	}
	block, err := lockBlock(ctx, root.Root, p, c, lock)
	if err != nil {
		d.LockProblem = err.Error()
	} else {
		d.Lock = block
	}
	return d, nil
}

// lockPlatforms are the platforms ?platform= asks for, each one the
// release serves; all it serves when none is asked for.
func lockPlatforms(served []names.Platform, asked []string) ([]names.Platform, error) {
	if len(asked) == 0 {
		return served, nil
	}
	var out []names.Platform
	for _, s := range asked {
		pl, err := names.ParsePlatform(s)
		if err != nil {
			return nil, respond.BadPath("platform %q: %v", clipText(s), err)
		}
		if !slices.Contains(served, pl) {
			return nil, source.NotFoundf("no package for %s is served", pl)
		}
		if !slices.Contains(out, pl) {
			out = append(out, pl)
		}
	}
	return out, nil
}

// lockBlock is the provider block oci-tofu lock writes for the release
// at root, locked for platforms with constraint c (lockfile.Release,
// nothing downloaded: a package without a trusted stored h1 has no
// block), cached by the index's digest.
func lockBlock(ctx context.Context, root *source.Root, p names.Provider, c string, platforms []names.Platform) (string, error) {
	key := "the lock-file block (" + c + ")"
	for _, pl := range platforms {
		key += " " + pl.String()
	}
	val, err := root.Repo.Described(ctx, key, root.Digest, func(ctx context.Context, repo oci.ReadOnlyRepository, _ string) (any, int64, error) {
		lp, err := lockfile.Release(ctx, repo, p, root.Index, c, lockfile.Options{Platforms: platforms, NoDownload: true})
		if err != nil {
			return nil, 0, err
		}
		b := string(lp.Bytes())
		return b, int64(len(b)), nil
	})
	if err != nil {
		return "", err
	}
	s, _ := val.(string)
	return s, nil
}

// heldUnder is nil when p's page may be shown: p is under the request's
// own registry hostname, or the listing of what is held names it. A
// template without ${hostname} maps every host's address to one
// repository: without this, a link could show the proxy's providers
// under any host, with that host's policy rules and a snippet whose
// source is on it.
func (h *Handlers) heldUnder(ctx context.Context, p names.Provider) error {
	if own, ok := OwnHost(ctx); ok && p.Hostname == own {
		return nil
	}
	own, _ := OwnHost(ctx)
	held, err := h.Held(ctx, own)
	if err != nil {
		return err
	}
	if slices.Contains(held.Providers, p) {
		return nil
	}
	return source.NotFoundf("provider %s is not held here", p)
}
