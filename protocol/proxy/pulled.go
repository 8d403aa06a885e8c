package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/source"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
)

// PullPrefix serves the files of provider releases the registry does not
// hold yet: <via>/<host>/<namespace>/<type>/<version>/<SHA256SUMS
// sha256>/<file>, via being "m" (network mirror) or "r" (registry
// protocol). The SHA256SUMS digest pins the URL to the origin release whose
// signature was verified when the metadata handed the URL out.
const PullPrefix = "/v1/pull/"

// pulledProviders is the providerSource with pull-through: what the
// registry holds (heldProviders), and for what it does not hold, what the
// allow-listed origin of the address offers, fetched, verified and stored
// by the pull-through engine.
type pulledProviders struct {
	*heldProviders
	engine *pullthrough.Engine
}

// networkMirrorIndex is index.json: what the registry holds and what the
// origin offers. With the origin failing, what the registry holds (logged
// and counted), or the origin's error when it holds nothing.
func (h *pulledProviders) networkMirrorIndex(ctx context.Context, p names.Provider) (any, time.Time, error) {
	t, ok := h.engine.MirrorTarget(p)
	if !ok {
		return h.heldProviders.networkMirrorIndex(ctx, p)
	}
	if h.factsRule(p) { // pulled_facts.go
		h.sightOrigin(ctx, p, t)
		return h.heldProviders.networkMirrorIndex(ctx, p)
	}
	held, at, err := h.heldVersions(ctx, p)
	if err != nil {
		return nil, at, err
	}
	held = h.allowedOrigin(p, held) // pulled_policy.go
	index := wire.MirrorIndex{Versions: map[string]struct{}{}}
	for _, v := range held {
		index.Versions[v.String()] = struct{}{}
	}
	l, fetched, oerr := h.engine.Offered(ctx, t)
	if oerr != nil {
		if len(held) == 0 {
			return nil, at, oerr
		}
		h.engine.DegradedListing("provider", t.Origin.String(), oerr)
		return index, at, nil
	}
	for _, v := range h.allowedOrigin(p, l.Versions) {
		index.Versions[v.String()] = struct{}{}
	}
	return index, earliestNonZero(at, fetched), nil
}

// heldVersions lists the versions the registry holds for p, with those
// pull-through stored lately; none when its repository does not exist.
func (h *pulledProviders) heldVersions(ctx context.Context, p names.Provider) (names.VersionList, time.Time, error) {
	repo, err := h.providerRepo(p)
	if err != nil {
		return nil, time.Time{}, err
	}
	l, err := repo.Versions(ctx)
	if err != nil && !source.Absent(err) {
		return nil, l.At, err
	}
	vs := l.Versions
	for _, sv := range h.engine.Recent(repo.Name()) {
		if !slices.ContainsFunc(vs, func(v names.Version) bool { return v.Same(sv.Version) }) {
			vs = append(vs, sv.Version)
		}
	}
	return vs, l.At, nil
}

// networkMirrorVersion is <version>.json; for a version the registry does
// not hold, the origin's packages, verified against its signed SHA256SUMS,
// at pull URLs, each with its zh: hash (the h1 is known only once the
// package is unpacked; it is offered once the release is stored).
func (h *pulledProviders) networkMirrorVersion(ctx context.Context, p names.Provider, v names.Version) (any, error) {
	doc, err := h.heldProviders.networkMirrorVersion(ctx, p, v)
	t, ok := h.engine.MirrorTarget(p)
	if !ok || !source.IsNotHeld(err) {
		return doc, err
	}
	if h.factsRule(p) { // pulled_facts.go
		return nil, h.notYetHeld(p, t, v)
	}
	rel, err := h.engine.ProviderRelease(ctx, t, v)
	if err != nil {
		return nil, err
	}
	archives := make(map[string]wire.MirrorArchive, len(rel.Platforms))
	for _, pl := range h.allowedArchives(p, rel.Platforms) { // pulled_policy.go
		archives[pl.String()] = wire.MirrorArchive{
			URL:    h.pullRef(t, v, rel.SumsDigest(), rel.ZipName(pl)),
			Hashes: []string{pkghash.ZH(rel.ZipSHA256(pl))},
		}
	}
	return wire.MirrorVersion{Archives: archives}, nil
}

// versionsDoc is the registry protocol's versions document: the versions
// the registry holds (as heldProviders lists them) and those the origin
// offers besides, with the origin's protocols and platforms.
func (h *pulledProviders) versionsDoc(ctx context.Context, p names.Provider, shown string) (any, time.Time, error) {
	t, ok, err := h.registryTarget(ctx, p)
	if err != nil {
		return nil, time.Time{}, err
	}
	if !ok {
		return h.heldProviders.versionsDoc(ctx, p, shown)
	}
	if h.factsRule(p) { // pulled_facts.go
		h.sightOrigin(ctx, p, t)
		return h.heldProviders.versionsDoc(ctx, p, shown)
	}
	doc := wire.RegistryVersions{Versions: []*wire.RegistryVersion{}}
	d, at, err := h.heldProviders.versionsDoc(ctx, p, p.String())
	switch {
	case err == nil:
		doc = d.(wire.RegistryVersions)
	case !source.Absent(err):
		return nil, at, err
	}
	have, denied := map[string]bool{}, 0
	for _, v := range doc.Versions {
		have[v.Version] = true
	}
	deniedOffer := func(v string) bool { // pulled_policy.go
		w := h.deniedOffer(p, v)
		if w != "" {
			addWarning(&doc, w)
			denied++
		}
		return w != ""
	}
	if ref, err := h.mappings.Map(p); err == nil {
		for _, sv := range h.engine.Recent(ref.Name()) {
			if sv.Registry != nil && !have[sv.Registry.Version] && !deniedOffer(sv.Registry.Version) {
				doc.Versions = append(doc.Versions, sv.Registry)
				have[sv.Registry.Version] = true
			}
		}
	}
	l, fetched, oerr := h.engine.Offered(ctx, t)
	if oerr != nil {
		if len(doc.Versions) == 0 {
			return nil, at, oerr
		}
		h.engine.DegradedListing("provider", t.Origin.String(), oerr)
		if pullthrough.Classify(oerr) != pullthrough.FailureNotFound {
			doc.Warnings = append(doc.Warnings, fmt.Sprintf("origin %s is unavailable: only the versions the proxy's registry holds are listed", t.Origin.Hostname))
		}
		return doc, at, nil
	}
	for _, v := range l.Versions {
		if have[v.String()] || deniedOffer(v.String()) {
			continue
		}
		o := l.ByVersion[v.String()]
		doc.Versions = append(doc.Versions, &wire.RegistryVersion{Version: v.String(), Protocols: o.Protocols, Platforms: h.offeredPlatforms(p, o.Platforms)})
	}
	if doc, err = h.withoutDenied(p, doc, denied); err != nil { // pulled_policy.go
		return nil, at, err
	}
	return doc, earliestNonZero(at, fetched), nil
}

// downloadDoc answers …/download/<os>/<arch>; for a version the registry
// does not hold, the origin's SHA256SUMS, signature and keys (served by
// the proxy, as verified) and the package at a pull URL. The package's
// download starts at once, since the client asks for it next.
func (h *pulledProviders) downloadDoc(ctx context.Context, p names.Provider, req RegistryRequest) (any, error) {
	doc, err := h.heldProviders.downloadDoc(ctx, p, req)
	if !source.IsNotHeld(err) {
		return doc, err
	}
	t, ok, terr := h.registryTarget(ctx, p)
	if terr != nil || !ok {
		return doc, cmpOr(terr, err)
	}
	if h.factsRule(p) { // pulled_facts.go
		return nil, h.notYetHeld(p, t, req.Version)
	}
	v, pl := req.Version, req.Platform
	if err := h.platformRefusal(p, v, pl); err != nil { // policy.go: before the origin is asked
		return nil, err
	}
	rel, err := h.engine.ProviderRelease(ctx, t, v)
	if err != nil {
		return nil, err
	}
	if !rel.Has(pl) {
		return nil, source.NotFoundf("provider %s %s has no package for %s", t.Served, v, pl)
	}
	if _, _, err := h.engine.StartProvider(ctx, t, v, rel, rel.ZipName(pl), false); err != nil && !errors.Is(err, pullthrough.ErrFinished) {
		h.log.Debug("pull-through: could not start the download early", "error", err)
	}
	sums := rel.SumsDigest()
	protos := rel.Protocols
	if len(protos) == 0 {
		protos = protocols(oci.ProvenanceSummary{}, false)
	}
	return wire.RegistryDownload{
		Protocols:           protos,
		OS:                  pl.OS,
		Arch:                pl.Arch,
		Filename:            rel.ZipName(pl),
		DownloadURL:         h.pullRef(t, v, sums, rel.ZipName(pl)),
		SHASumsURL:          h.pullRef(t, v, sums, rel.SumsName()),
		SHASumsSignatureURL: h.pullRef(t, v, sums, rel.SignatureName()),
		SHASum:              rel.ZipSHA256(pl),
		SigningKeys:         rel.Downloads[pl].SigningKeys,
	}, nil
}

// registryTarget is the pull-through target of p, addressed under the
// proxy's own hostname through the Provider Registry Protocol, unless its
// repository holds versions pull-through did not store (no
// pullthrough.PulledThroughTag): a provider someone pushed under the
// proxy's name is never merged with, nor pulled over by, the origin's
// provider of that name (dependency confusion), and the origin is not
// asked about it.
func (h *pulledProviders) registryTarget(ctx context.Context, p names.Provider) (pullthrough.Target, bool, error) {
	t, ok := h.engine.RegistryTarget(p)
	if !ok {
		return t, false, nil
	}
	pushed, err := h.heldPushed(ctx, p)
	return t, err == nil && !pushed, err
}

// heldPushed reports whether p's repository holds pushed versions
// (pullthrough.HoldsPushedVersions).
func (h *pulledProviders) heldPushed(ctx context.Context, p names.Provider) (bool, error) {
	repo, err := h.providerRepo(p)
	if err != nil {
		return false, nil // no repository: nothing held (the caller reports the mapping)
	}
	return pullthrough.HoldsPushedVersions(ctx, repo)
}

// pullRef is a pull URL in a document (its base marked: baseurl.go),
// signed when client authentication is on.
func (h *pulledProviders) pullRef(t pullthrough.Target, v names.Version, sums digest.Digest, file string) string {
	return h.fileRef(PullPrefix, t.Via+"/"+archivePath(t.Served, v, sums, file))
}

// earliestNonZero is the earlier of a and b, a zero time meaning none.
func earliestNonZero(a, b time.Time) time.Time {
	if a.IsZero() {
		return b
	}
	if b.IsZero() || a.Before(b) {
		return a
	}
	return b
}
