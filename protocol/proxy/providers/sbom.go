package providers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// SBOMPrefix serves a provider version's SBOM page,
// HOST/NAMESPACE/TYPE/VERSION: per platform, a summary of the SBOM
// stored for it and, with a vulnerability database, what the database
// finds in it; and each platform's SPDX document as stored,
// HOST/NAMESPACE/TYPE/VERSION/OS_ARCH.spdx.json. Outside the protocols'
// prefixes (/v1/…).
const SBOMPrefix = "/sbom/"

// spdxSuffix ends the path of a platform's SPDX document.
const spdxSuffix = ".spdx.json"

// SBOMs serves the SBOM pages. A version is resolved as the provider
// protocols resolve it, through their source (the same mappings, policy
// and attestation rule; what the registry holds only: nothing is pulled
// through), after the client's scope is checked; what is read of the
// SBOMs is cached per platform manifest (store.Repo.Described).
type SBOMs struct {
	Out    *respond.Responder
	Source source.Providers
	// Vulns, when set, is the vulnerability database the SBOMs are
	// matched against, as the policy's vulnerabilities blocks match them.
	Vulns *vulns.Live
	// Render renders an SBOM page as HTML (page.RenderSBOM: it looks
	// like the page at "/").
	Render func(SBOMPage) ([]byte, error)
}

// SBOMRequest is a parsed SBOM page path.
type SBOMRequest struct {
	Provider names.Provider
	Version  names.Version
	// Platform, for a platform's SPDX document (Document true).
	Platform names.Platform
	Document bool
}

// ParseSBOMPath parses the escaped path below SBOMPrefix.
func ParseSBOMPath(escaped string) (SBOMRequest, error) {
	n := strings.Count(escaped, "/") + 1
	if n != 4 && n != 5 {
		return SBOMRequest{}, respond.BadPath("want HOST/NAMESPACE/TYPE/VERSION or HOST/NAMESPACE/TYPE/VERSION/OS_ARCH%s", spdxSuffix)
	}
	seg, err := respond.SplitPath(escaped, n)
	if err != nil {
		return SBOMRequest{}, err
	}
	var req SBOMRequest
	if req.Provider, err = respond.ParseProvider(seg[0], seg[1], seg[2]); err != nil {
		return SBOMRequest{}, err
	}
	if req.Version, err = respond.ParseVersion(seg[3]); err != nil {
		return SBOMRequest{}, err
	}
	if n == 5 {
		pl, ok := strings.CutSuffix(seg[4], spdxSuffix)
		if !ok {
			return SBOMRequest{}, respond.BadPath("want OS_ARCH%s, got %q", spdxSuffix, seg[4])
		}
		if req.Platform, err = names.ParsePlatform(pl); err != nil {
			return SBOMRequest{}, respond.BadPath("%v", err)
		}
		req.Document = true
	}
	return req, nil
}

// SBOMPath is the SBOM page of version of the provider at address
// (HOST[:PORT]/NAMESPACE/TYPE, as the page records it; the port is left
// out); "" for an address of another shape.
func SBOMPath(address, version string) string {
	parts := strings.Split(address, "/")
	if len(parts) != 3 {
		return ""
	}
	host := strings.Trim(respond.HostOnly(parts[0]), "[]")
	return SBOMPrefix + host + "/" + parts[1] + "/" + parts[2] + "/" + version
}

// ServeHTTP answers an SBOM page or a platform's SPDX document.
func (h *SBOMs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !respond.AllowRead(w, r) {
		return
	}
	req, err := ParseSBOMPath(strings.TrimPrefix(r.URL.EscapedPath(), SBOMPrefix))
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	if c := respond.ReaderOf(r.Context()); c != nil && !h.Out.InScope(w, r, c, names.KindProvider, req.Provider.String()) {
		return
	}
	root, platforms, err := h.resolve(r, req)
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	if req.Document {
		h.serveDocument(w, r, req, root)
		return
	}
	h.servePage(w, r, req, root, platforms)
}

// resolve is the stored release req names, and its platforms the policy
// serves, as the provider protocols would resolve and read it.
func (h *SBOMs) resolve(r *http.Request, req SBOMRequest) (*source.Root, []names.Platform, error) {
	ctx := r.Context()
	via := names.ViaMirror
	if host, err := h.Out.RegistryHostname(r); err == nil && host == req.Provider.Hostname {
		via = names.ViaRegistry
	}
	pr, err := source.ResolveHeldProvider(ctx, h.Source, req.Provider, req.Version, via)
	if err != nil {
		return nil, nil, err
	}
	if pr.Root == nil {
		return nil, nil, source.NotFoundf("%s %s is not stored", req.Provider, req.Version)
	}
	rel, err := h.Source.ReadProvider(ctx, pr, 0) // the attestation rule; the platforms the policy leaves out
	if err != nil {
		return nil, nil, err
	}
	var platforms []names.Platform
	for _, pl := range rel.Platforms {
		if _, ok := pr.Root.Index.Platforms[pl]; ok {
			platforms = append(platforms, pl)
		}
	}
	return pr.Root, platforms, nil
}

// SBOMPage is what the SBOM page shows.
type SBOMPage struct {
	Address, Version string
	Platforms        []SBOMPlatform
	// Database: the vulnerability database the SBOMs were matched
	// against ("" without one); Vulnerable, whether it found anything.
	Database   string
	Vulnerable bool
	// Stored: some platform shown has an SBOM; Missing: some has none.
	Stored, Missing bool
}

// SBOMPlatform is one platform on the SBOM page.
type SBOMPlatform struct {
	Platform, Manifest string
	Document           string // the SPDX document's URL, relative to the page's
	Missing            string
	Summary            *sbom.Summary
	Findings           []vulns.Finding
}

func (h *SBOMs) servePage(w http.ResponseWriter, r *http.Request, req SBOMRequest, root *source.Root, platforms []names.Platform) {
	ctx := r.Context()
	d := SBOMPage{Address: req.Provider.String(), Version: req.Version.String(), Platforms: make([]SBOMPlatform, len(platforms))}
	err := h.Out.Store.Each(ctx, len(platforms), func(ctx context.Context, i int) error {
		pl := platforms[i]
		s, err := source.SBOMSummaryOf(ctx, *root, pl)
		d.Platforms[i] = SBOMPlatform{Platform: pl.String(), Manifest: root.Index.Platforms[pl].Digest.String(), Missing: s.Missing, Summary: s.Summary,
			Document: d.Version + "/" + pl.String() + spdxSuffix} // relative: PublicURL may have a path
		return err
	})
	for _, p := range d.Platforms {
		d.Stored, d.Missing = d.Stored || p.Summary != nil, d.Missing || p.Summary == nil
	}
	if err == nil {
		err = h.match(ctx, req, root, &d)
	}
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	b, err := h.Render(d)
	if err != nil {
		h.Out.Log.Error("rendering the SBOM page", "error", err)
		respond.WriteError(w, r, http.StatusInternalServerError, "rendering the page failed")
		return
	}
	respond.WriteHTML(w, r, b)
}

// match matches every platform's SBOM against the database in force, as
// the policy's vulnerabilities blocks do (sharing their cache), notes
// whether the version has known vulnerabilities, and adds the findings
// of the platforms shown to d.
func (h *SBOMs) match(ctx context.Context, req SBOMRequest, root *source.Root, d *SBOMPage) error {
	db := h.Vulns.Current()
	if db == nil {
		return nil
	}
	all := root.Index.SortedPlatforms()
	pvs := make([]policy.PlatformVulns, len(all))
	if err := h.Out.Store.Each(ctx, len(all), func(ctx context.Context, i int) (err error) {
		pvs[i], err = source.PlatformVulns(ctx, db, *root, all[i])
		return err
	}); err != nil {
		return err
	}
	d.Database, d.Vulnerable = fmt.Sprintf("%d entries, modified %s", db.Entries(), db.Modified().UTC().Format("2006-01-02")), policy.HasFindings(pvs)
	h.Out.Metrics.NoteVulnerable(d.Address, d.Version, db.Fingerprint(), d.Vulnerable)
	for i := range d.Platforms {
		for _, pv := range pvs {
			if pv.Platform == d.Platforms[i].Platform {
				d.Platforms[i].Findings = pv.Findings
			}
		}
	}
	return nil
}

// serveDocument answers a platform's SPDX document, as stored.
func (h *SBOMs) serveDocument(w http.ResponseWriter, r *http.Request, req SBOMRequest, root *source.Root) {
	m, ok := root.Index.Platforms[req.Platform]
	if !ok {
		h.Out.Fail(w, r, source.NotFoundf("%s %s has no platform %s", req.Provider, req.Version, req.Platform))
		return
	}
	v, err := root.Repo.Described(r.Context(), "the SBOM's document", m.Digest, func(ctx context.Context, repo oci.ReadOnlyRepository, _ string) (any, int64, error) {
		st, err := sbom.Read(ctx, repo, m.Digest)
		switch {
		case errors.Is(err, sbom.ErrNoSBOM), errors.Is(err, sbom.ErrBadSBOM):
			return []byte(nil), 0, nil
		case err != nil:
			return nil, 0, err
		}
		return st.SPDX, int64(len(st.SPDX)), nil
	})
	if err != nil {
		h.Out.Fail(w, r, err)
		return
	}
	b, _ := v.([]byte)
	if b == nil {
		h.Out.Fail(w, r, source.NotFoundf("%s %s %s: no readable SBOM is stored", req.Provider, req.Version, req.Platform))
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", sbom.SPDXMediaType)
	hd.Set("Content-Length", fmt.Sprint(len(b)))
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodHead {
		w.Write(b)
	}
}
