package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// heldProviders is the providerSource of what the registry holds: every
// document built from the store's reads of version tags, indexes,
// platform manifests and provenance.
type heldProviders struct {
	*responder
	mappings  store.ProviderMappings
	generated *cache.Cache[*checksums] // SHA256SUMS the proxy signed itself
}

// providerRepo is the repository a provider maps to.
func (h *heldProviders) providerRepo(p names.Provider) (*store.Repo, error) {
	ref, err := h.mappings.Map(p)
	var se *store.Error
	if errors.Is(err, store.ErrNoRepository) && errors.As(err, &se) {
		return nil, source.NotFoundf("provider %s: %v", p, se.Err)
	}
	if err != nil {
		return nil, source.Missing(err, "provider "+p.String(), "provider %s is not served by this proxy (see its include and exclude filters)", p)
	}
	return h.store.Repo(ref), nil
}

// release is one provider version as found in its repository.
type release struct {
	repo *store.Repo
	p    names.Provider
	v    names.Version
	pv   *oci.ProviderVersion
	// zips are the platforms' zip layers, when read (needZips).
	zips map[names.Platform]ocispec.Descriptor
	prov *store.Provenance // nil when the artifact has none (third-party tools)
	// provErr is why a provenance the index names could not be read
	// (corrupt, invalid or missing): the packages are still served by
	// their digests, but nothing that needs the provenance is.
	provErr error
	// unadmitted is set while the admission verdict (Options.RequireAttestation, RequireTrust)
	// has not been read: nothing of the release may be served before it is
	// (readRelease or admitted).
	unadmitted bool
}

// needs says what a handler reads of a release besides its index.
type needs int

const (
	needProvenance needs = 1 << iota
	needZips
)

// listing lists a provider's versions; a provider without any is 404.
func (h *heldProviders) listing(ctx context.Context, p names.Provider) (*store.Repo, store.Listing, error) {
	repo, err := h.providerRepo(p)
	if err != nil {
		return nil, store.Listing{}, err
	}
	return h.listingOf(ctx, p, repo, nil)
}

// listingPrefetched is listing for the registry protocol's versions
// document, which reads every version's index: the indexes of the versions
// on the tag list's first pages are read while its later pages are (one
// round trip each at the registry's distance). Versions the policy denies
// are not read, as the document does not read them.
func (h *heldProviders) listingPrefetched(ctx context.Context, p names.Provider) (*store.Repo, store.Listing, error) {
	repo, err := h.providerRepo(p)
	if err != nil {
		return nil, store.Listing{}, err
	}
	pf := h.store.Prefetch(ctx, func(ctx context.Context, v names.Version) error {
		_, err := repo.ProviderVersion(ctx, v)
		return keepFatal(err) // what would stop the listing's fan-out (held_registry.go)
	})
	defer pf.Stop()
	repo, l, err := h.listingOf(ctx, p, repo, func(v names.Version) {
		if h.policyWarning(p, v) == "" {
			pf.Add(v)
		}
	})
	if err != nil {
		return repo, l, err
	}
	if err := pf.Failed(); err != nil { // what the listing's fan-out would stop at
		return nil, l, err
	}
	return repo, l, nil
}

// listingOf is listing of p's repository repo, passing early to
// store.Repo.VersionsEarly.
func (h *heldProviders) listingOf(ctx context.Context, p names.Provider, repo *store.Repo, early func(names.Version)) (*store.Repo, store.Listing, error) {
	l, err := repo.VersionsEarly(ctx, early)
	if err != nil {
		return nil, l, source.Missing(err, "provider "+p.String(), "unknown provider %s", p)
	}
	if len(l.Versions) == 0 {
		return nil, l, source.NotFoundf("provider %s has no versions (no tag of its repository is a version)", p)
	}
	return repo, l, nil
}

// release reads the index version v's tag names, and its admission
// verdict. When the registry does not hold the version, the error is a
// versionNotHeld.
func (h *heldProviders) release(ctx context.Context, p names.Provider, v names.Version) (*release, error) {
	rel, err := h.releaseUnadmitted(ctx, p, v)
	if err != nil {
		return nil, err
	}
	if err := h.admitted(ctx, rel); err != nil {
		return nil, err
	}
	return rel, nil
}

// releaseUnadmitted is release without the admission verdict: readRelease
// reads it beside the provenance and platform manifests (the attestation's
// two round trips overlap theirs), and admitted before any other answer.
func (h *heldProviders) releaseUnadmitted(ctx context.Context, p names.Provider, v names.Version) (*release, error) {
	repo, err := h.providerRepo(p)
	if err != nil {
		return nil, source.MarkNotHeld(err)
	}
	if err := h.policyDenial(policy.KindProvider, p.String(), "provider "+p.String(), v); err != nil { // policy.go
		return nil, err
	}
	pv, err := repo.ProviderVersion(ctx, v)
	if err != nil {
		return nil, source.MarkNotHeld(source.Missing(err, "provider "+p.String(), "provider %s has no version %s (OpenTofu resolves the tag %s)", p, v, names.TagForVersion(v)))
	}
	if err := h.factsDenial(ctx, policy.KindProvider, p.String(), "provider "+p.String(), v, releaseRoot{repo: repo, subject: pv.Index.Digest, pv: pv}); err != nil { // policy_facts.go
		return nil, err
	}
	return &release{repo: repo, p: p, v: v, pv: pv, unadmitted: true}, nil
}

// admitted reads rel's admission verdict if it was not read yet: nil when
// the release may be served, a 404 naming why not, or the registry's
// failure (admission.go).
func (h *heldProviders) admitted(ctx context.Context, rel *release) error {
	if !rel.unadmitted {
		return nil
	}
	if err := h.admit(ctx, rel.repo, rel.p, rel.v, rel.pv.Index.Digest); err != nil { // admission.go
		return err
	}
	rel.unadmitted = false
	return nil
}

// releaseAt reads the release with a given index digest, as archive URLs
// name it: the exact content the client's metadata described.
func (h *heldProviders) releaseAt(ctx context.Context, p names.Provider, v names.Version, index digest.Digest) (*release, error) {
	repo, err := h.providerRepo(p)
	if err != nil {
		return nil, err
	}
	if err := h.policyDenial(policy.KindProvider, p.String(), "provider "+p.String(), v); err != nil { // policy.go
		return nil, err
	}
	pv, err := repo.ProviderVersionAt(ctx, v, index)
	if err != nil {
		return nil, source.Missing(err, "provider "+p.String(), "provider %s has no release with index %s", p, index)
	}
	if err := h.factsDenial(ctx, policy.KindProvider, p.String(), "provider "+p.String(), v, releaseRoot{repo: repo, subject: index, pv: pv}); err != nil { // policy_facts.go
		return nil, err
	}
	if err := h.admit(ctx, repo, p, v, index); err != nil {
		return nil, err
	}
	return &release{repo: repo, p: p, v: v, pv: pv}, nil
}

// readRelease reads what n names of a release at once: its provenance
// (two round trips: the manifest, then its files), its platform manifests
// (one) and, when not read yet, its admission verdict (two: the .att
// manifest, then its layer), so a document that needs them waits two round
// trips after the index, not three or five. A refused release is refused
// whatever the other reads found.
func (h *heldProviders) readRelease(ctx context.Context, rel *release, n needs) error {
	var verdict chan error
	if rel.unadmitted {
		verdict = make(chan error, 1)
		go func() {
			verdict <- cache.Recover(func() error { return h.admitted(ctx, rel) })
		}()
	}
	err := h.readParts(ctx, rel, n)
	if verdict != nil {
		if aerr := <-verdict; aerr != nil {
			return aerr
		}
	}
	return err
}

// readParts reads the provenance and platform manifests n names, at once.
func (h *heldProviders) readParts(ctx context.Context, rel *release, n needs) error {
	var reads []func(context.Context) error
	if n&needProvenance != 0 {
		reads = append(reads, func(ctx context.Context) error { return h.withProvenance(ctx, rel) })
	}
	if n&needZips != 0 {
		reads = append(reads, func(ctx context.Context) (err error) {
			rel.zips, err = rel.repo.Zips(ctx, rel.pv)
			return err
		})
	}
	return h.store.Each(ctx, len(reads), func(ctx context.Context, i int) error { return reads[i](ctx) })
}

// withProvenance reads a release's provenance. One that the registry
// holds but cannot serve intact (corrupt, invalid, missing) costs only
// what needs it — stored h1 hashes, the publisher's SHA256SUMS and
// signature —, not the packages, which are served by their digests.
func (h *heldProviders) withProvenance(ctx context.Context, rel *release) error {
	prov, err := rel.repo.Provenance(ctx, rel.pv)
	switch store.FailureOf(err) {
	case oci.FailureNone:
		rel.prov = prov
		return rel.typeAgrees()
	case oci.FailureCorrupt, oci.FailureInvalid, oci.FailureNotFound:
		h.log.Warn("a provider release's provenance cannot be read; serving its packages by digest alone",
			"provider", rel.p.String(), "version", rel.v.String(), "index", rel.pv.Index.Digest.String(), "error", err.Error())
		rel.provErr = err
	default:
		return err
	}
	return nil
}

// typeAgrees refuses a release whose provenance names another provider
// type than the address it is served under (the template mapped the
// address to a repository holding another provider): tofu would install
// its packages and then find no terraform-provider-<type> executable.
func (rel *release) typeAgrees() error {
	if rel.prov == nil || rel.prov.Meta == nil {
		return nil
	}
	typ := rel.prov.Meta.Type
	if typ == "" || strings.EqualFold(typ, rel.p.Type) {
		return nil
	}
	what := fmt.Sprintf("the release mapped to %s is of provider type %s, not %s: tofu would find no %s%s executable in it", rel.p, typ, rel.p.Type, names.ProviderFilePrefix, rel.p.Type)
	return &store.Error{Failure: oci.FailureInvalid, Repo: rel.repo.Name(), What: what, Err: errors.New(what)}
}

// protocols are a release's plugin protocol versions; "5.0" when unknown
// (third-party artifacts; see docs/proxy.md).
func protocols(sum oci.ProvenanceSummary, known bool) []string {
	if known && len(sum.Protocols) > 0 {
		return sum.Protocols
	}
	return []string{"5.0"}
}

// h1 is the stored h1 of a platform's package when it can be trusted
// (pkghash.TrustedH1), or "".
func (rel *release) h1(p names.Platform, zip ocispec.Descriptor) string {
	if rel.prov == nil {
		return ""
	}
	return pkghash.TrustedH1(rel.prov.Meta, rel.prov.Files, p, zip)
}

// hashes are a package's lock-file hashes: its trusted h1, if any, and zh.
func (rel *release) hashes(p names.Platform, zip ocispec.Descriptor) []string {
	var out []string
	if h1 := rel.h1(p, zip); h1 != "" {
		out = append(out, h1)
	}
	return append(out, pkghash.ZH(zip.Digest.Encoded()))
}

// archiveRef is an archive's URL in a document (its base marked:
// baseurl.go), signed when client authentication is on.
func (h *heldProviders) archiveRef(rel *release, file string) string {
	return h.fileRef(ArchivePrefix, archivePath(rel.p, rel.v, rel.pv.Index.Digest, file))
}

// networkMirrorIndex lists the versions the mirror can serve: those whose
// canonical tag exists. A version OpenTofu's oci_mirror would list from a
// non-canonical tag alone ("1.2") is left out, as it is from /versions:
// listing it would make every client that picks it fail; `oci-tofu
// verify` reports such tags. With an admission rule, versions it does
// not admit are left out too (their indexes and attestations are read),
// and those the policy file denies (nothing read).
func (h *heldProviders) networkMirrorIndex(ctx context.Context, p names.Provider) (any, time.Time, error) {
	repo, l, err := h.listing(ctx, p)
	if err != nil {
		return nil, l.At, err
	}
	resolvable := make([]names.Version, 0, len(l.Versions))
	for _, v := range l.Versions {
		if tag, bad := l.Unresolvable[v.String()]; bad {
			h.log.Warn("version left out: its only tag is not the one OpenTofu resolves", "provider", p.String(), "version", v.String(), "tag", tag)
			continue
		}
		resolvable = append(resolvable, v)
	}
	resolvable = h.policyAllowed(policy.KindProvider, p.String(), resolvable) // policy.go
	admitted, err := h.admittedVersions(ctx, repo, p, resolvable)             // admission.go
	if err == nil {
		admitted, err = h.factsAllowedVersions(ctx, repo, p, admitted) // policy_facts.go
	}
	if err != nil {
		return nil, l.At, err
	}
	index := wire.MirrorIndex{Versions: make(map[string]struct{}, len(admitted))}
	for _, v := range admitted {
		index.Versions[v.String()] = struct{}{}
	}
	h.seen.providerListed(p.String(), viaMirror, l.Versions)
	return index, l.At, nil
}

// networkMirrorVersion is <version>.json: every platform's archive, with its
// trusted h1 and its zh.
func (h *heldProviders) networkMirrorVersion(ctx context.Context, p names.Provider, v names.Version) (any, error) {
	rel, err := h.releaseUnadmitted(ctx, p, v) // admitted by readRelease
	if err != nil {
		return nil, err
	}
	if err := h.readRelease(ctx, rel, needProvenance|needZips); err != nil {
		return nil, err
	}
	sum, known := rel.summary()
	h.seen.providerVersion(p.String(), viaMirror, v, rel.pv.SortedPlatforms(), known && len(sum.SigningKeyIDs) > 0)
	zips := h.allowedZips(p, rel.zips) // policy.go
	archives := make(map[string]wire.MirrorArchive, len(zips))
	for pl, z := range zips {
		archives[pl.String()] = wire.MirrorArchive{
			URL:    h.archiveRef(rel, names.ProviderZipName(p.Type, v.String(), pl)),
			Hashes: rel.hashes(pl, z),
		}
	}
	return wire.MirrorVersion{Archives: archives}, nil
}

func (h *heldProviders) serveZip(w http.ResponseWriter, r *http.Request, rel *release, p names.Platform) {
	m, ok := rel.pv.Platforms[p]
	if !ok {
		h.fail(w, r, source.NotFoundf("provider %s %s has no package for %s", rel.p, rel.v, p))
		return
	}
	if err := h.platformRefusal(rel.p, rel.v, p); err != nil { // policy.go
		h.fail(w, r, err)
		return
	}
	zip, err := rel.repo.PlatformZip(r.Context(), m)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.serveBlob(w, r, rel.repo, zip, blobFile{name: names.ProviderZipName(rel.p.Type, rel.v.String(), p), contentType: "application/zip", pinned: true})
}

// serveChecksums serves SHA256SUMS or its signature.
func (h *heldProviders) serveChecksums(w http.ResponseWriter, r *http.Request, rel *release, file ArchiveFile) {
	if err := h.readRelease(r.Context(), rel, needProvenance|needZips); err != nil {
		h.fail(w, r, err)
		return
	}
	cs, err := h.checksums(r.Context(), rel, rel.zips)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	body, ctype := cs.data, "text/plain; charset=utf-8"
	if file == ArchiveSignature {
		body, ctype = cs.signature, "application/octet-stream"
	}
	h.writeSmallFile(w, r, body, ctype)
}

// serveHeldFile serves a file of a release the registry holds.
func (h *heldProviders) serveHeldFile(w http.ResponseWriter, r *http.Request, rel *release, req ArchiveRequest) {
	if req.File == ArchiveZip {
		h.serveZip(w, r, rel, req.Platform)
		return
	}
	h.serveChecksums(w, r, rel, req.File)
}
