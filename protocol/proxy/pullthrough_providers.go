package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// PullPrefix serves the files of provider releases the registry does not
// hold yet: <via>/<host>/<namespace>/<type>/<version>/<SHA256SUMS
// sha256>/<file>, via being "m" (network mirror) or "r" (registry
// protocol). The SHA256SUMS digest pins the URL to the origin release whose
// signature was verified when the metadata handed the URL out.
const PullPrefix = "/v1/pull/"

// Relative URLs from the metadata documents to PullPrefix.
const (
	mirrorToPull   = "../../../../pull/"
	registryToPull = "../../../../../../pull/"
)

// originListing is an origin registry's version listing, by canonical
// version.
type originListing struct {
	versions  names.VersionList
	byVersion map[string]*wire.RegistryVersion
}

// offered reads (cached for ListingTTL, then revalidated in the
// background) the versions the origin offers for a provider.
func (pt *pullThrough) offered(ctx context.Context, t pullTarget) (originListing, time.Time, error) {
	res, err := pt.listings.Get(ctx, t.origin.String(), func(ctx context.Context) (originListing, int64, error) {
		vs, err := pt.client.Versions(ctx, t.origin)
		if err != nil {
			pt.reportOriginError("provider", t.origin.String(), err)
			return originListing{}, 0, err
		}
		l := originListing{byVersion: map[string]*wire.RegistryVersion{}}
		for _, v := range vs {
			pv, err := names.ParseVersionLoose(v.Version)
			if err != nil || l.byVersion[pv.String()] != nil {
				continue
			}
			l.byVersion[pv.String()] = v
			l.versions = append(l.versions, pv)
		}
		l.versions.Sort()
		return l, int64(len(vs))*256 + 256, nil
	})
	return res.Val, res.Fetched, err
}

// reportOriginError logs and counts a failed read of origin metadata.
func (pt *pullThrough) reportOriginError(kind, what string, err error) {
	failure := originFailure(err)
	pt.metrics.originErrors.WithLabelValues(kind, failure).Inc()
	if failure == "not_found" || errors.Is(err, context.Canceled) {
		return
	}
	pt.log.Warn("pull-through: origin failed", slog.String("kind", kind), slog.String("what", what), slog.String("failure", failure), slog.Any("error", err))
}

// degradedListing logs and counts a listing answered without the origin.
func (pt *pullThrough) degradedListing(kind, what string, err error) {
	if originFailure(err) == "not_found" {
		return
	}
	pt.metrics.degraded.WithLabelValues(kind).Inc()
	pt.log.Warn("pull-through: listing only what the registry holds, the origin failed", slog.String("kind", kind), slog.String("what", what), slog.Any("error", err))
}

func providerFailKey(t pullTarget, v names.Version) string {
	return "provider " + t.origin.String() + " " + v.String()
}

// providerRelease is the origin's release of version v, its signature
// and digests verified (cached); a failure is remembered for FailureTTL.
func (pt *pullThrough) providerRelease(ctx context.Context, t pullTarget, v names.Version) (*ingest.ProviderRelease, error) {
	fk := providerFailKey(t, v)
	if err := pt.remembered("provider", fk, t.origin.Hostname); err != nil {
		return nil, err
	}
	res, err := pt.releases.Get(ctx, fk, func(ctx context.Context) (*ingest.ProviderRelease, int64, error) {
		l, _, err := pt.offered(ctx, t)
		if err != nil {
			return nil, 0, err
		}
		entry := l.byVersion[v.String()]
		if entry == nil {
			return nil, 0, fmt.Errorf("%s %s: %w", t.origin, v, origin.ErrNotFound)
		}
		rel, err := ingest.ResolveProviderRelease(ctx, pt.client, t.origin, entry, ingest.ResolveOptions{Concurrency: 8, EnforceGPGExpiration: pt.opts.EnforceGPGExpiration})
		if err != nil {
			pt.reportOriginError("provider", t.origin.String()+" "+v.String(), err)
			if kind := originFailure(err); kind == "tampered" {
				pt.failures.Add(fk, err, 0)
				pt.metrics.result("provider", kind)
			}
			return nil, 0, err
		}
		if len(rel.Warnings) > 0 {
			pt.log.Warn("pull-through: origin release accepted with warnings", "release", t.origin.String()+" "+v.String(), "warnings", rel.Warnings)
		}
		cost := len(rel.SHA256SUMS) + len(rel.Signature) + 4096
		for _, k := range rel.Keys {
			cost += len(k.Armored)
		}
		return rel, int64(cost), nil
	})
	if err != nil {
		return nil, originError(t.origin.Hostname, err)
	}
	return res.Val, nil
}

// heldVersions lists the versions the registry holds for p; none when
// its repository does not exist.
func (s *Server) heldVersions(ctx context.Context, p names.Provider) (names.VersionList, time.Time, error) {
	repo, err := s.providerRepo(p)
	if err != nil {
		return nil, time.Time{}, err
	}
	l, err := repo.Versions(ctx)
	if err != nil && !notHeld(err) {
		return nil, l.At, err
	}
	vs := l.Versions
	for _, sv := range s.pull.recent.list(repo.Name()) {
		if !slices.ContainsFunc(vs, func(v names.Version) bool { return v.Same(sv.version) }) {
			vs = append(vs, sv.version)
		}
	}
	return vs, l.At, nil
}

// pullNetworkMirrorIndex is index.json with pull-through: what the registry
// holds and what the origin offers. With the origin failing, what the
// registry holds (logged and counted), or the origin's error when it holds
// nothing.
func (s *Server) pullNetworkMirrorIndex(ctx context.Context, t pullTarget) (any, time.Time, error) {
	held, at, err := s.heldVersions(ctx, t.p)
	if err != nil {
		return nil, at, err
	}
	index := wire.MirrorIndex{Versions: map[string]struct{}{}}
	for _, v := range held {
		index.Versions[v.String()] = struct{}{}
	}
	l, fetched, oerr := s.pull.offered(ctx, t)
	if oerr != nil {
		if len(held) == 0 {
			return nil, at, originError(t.origin.Hostname, oerr)
		}
		s.pull.degradedListing("provider", t.origin.String(), oerr)
		return index, at, nil
	}
	for _, v := range l.versions {
		index.Versions[v.String()] = struct{}{}
	}
	return index, earliestNonZero(at, fetched), nil
}

// pullVersionsDoc is the registry protocol's versions document with
// pull-through: the versions the registry holds (as versionsDoc lists
// them) and those the origin offers besides, with the origin's protocols
// and platforms.
func (s *Server) pullVersionsDoc(ctx context.Context, t pullTarget) (any, time.Time, error) {
	doc := wire.RegistryVersions{Versions: []*wire.RegistryVersion{}}
	d, at, err := s.versionsDoc(ctx, t.p, t.p.String())
	switch {
	case err == nil:
		doc = d.(wire.RegistryVersions)
	case !notHeld(err):
		return nil, at, err
	}
	have := map[string]bool{}
	for _, v := range doc.Versions {
		have[v.Version] = true
	}
	if ref, err := s.providers.Map(t.p); err == nil {
		for _, sv := range s.pull.recent.list(ref.Name()) {
			if sv.registry != nil && !have[sv.registry.Version] {
				doc.Versions = append(doc.Versions, sv.registry)
				have[sv.registry.Version] = true
			}
		}
	}
	l, fetched, oerr := s.pull.offered(ctx, t)
	if oerr != nil {
		if len(doc.Versions) == 0 {
			return nil, at, originError(t.origin.Hostname, oerr)
		}
		s.pull.degradedListing("provider", t.origin.String(), oerr)
		if originFailure(oerr) != "not_found" {
			doc.Warnings = append(doc.Warnings, fmt.Sprintf("origin %s is unavailable: only the versions the proxy's registry holds are listed", t.origin.Hostname))
		}
		return doc, at, nil
	}
	for _, v := range l.versions {
		if have[v.String()] {
			continue
		}
		o := l.byVersion[v.String()]
		doc.Versions = append(doc.Versions, &wire.RegistryVersion{Version: v.String(), Protocols: o.Protocols, Platforms: o.Platforms})
	}
	return doc, earliestNonZero(at, fetched), nil
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

// pullRef is a pull URL's path below PullPrefix, signed when client
// authentication is on.
func (s *Server) pullRef(t pullTarget, v names.Version, sums digest.Digest, file string) string {
	p := t.via + "/" + archivePath(t.p, v, sums, file)
	if s.urls == nil {
		return p
	}
	return p + "?" + s.urls.sign(PullPrefix+p)
}

// pullNetworkMirrorVersion answers <version>.json for a version the registry does
// not hold: the origin's packages, verified against its signed SHA256SUMS,
// at pull URLs, each with its zh: hash (the h1 is known only once the
// package is unpacked; it is offered once the release is stored).
func (s *Server) pullNetworkMirrorVersion(ctx context.Context, t pullTarget, v names.Version) (any, error) {
	rel, err := s.pull.providerRelease(ctx, t, v)
	if err != nil {
		return nil, err
	}
	archives := make(map[string]wire.MirrorArchive, len(rel.Platforms))
	for _, pl := range rel.Platforms {
		archives[pl.String()] = wire.MirrorArchive{
			URL:    mirrorToPull + s.pullRef(t, v, rel.SumsDigest(), rel.ZipName(pl)),
			Hashes: []string{pkghash.ZH(rel.ZipSHA256(pl))},
		}
	}
	return wire.MirrorVersion{Archives: archives}, nil
}

// pullDownloadDoc answers …/download/<os>/<arch> for a version the
// registry does not hold: the origin's SHA256SUMS, signature and keys
// (served by the proxy, as verified), the package at a pull URL. The
// package's download starts at once, since the client asks for it next.
func (s *Server) pullDownloadDoc(ctx context.Context, t pullTarget, req RegistryRequest) (any, error) {
	v, pl := req.Version, req.Platform
	rel, err := s.pull.providerRelease(ctx, t, v)
	if err != nil {
		return nil, err
	}
	if !rel.Has(pl) {
		return nil, notFound("provider %s %s has no package for %s", t.p, v, pl)
	}
	if _, _, err := s.pull.startProvider(t, v, rel, rel.ZipName(pl)); err != nil && !errors.Is(err, errPullFinished) {
		s.log.Debug("pull-through: could not start the download early", "error", err)
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
		DownloadURL:         registryToPull + s.pullRef(t, v, sums, rel.ZipName(pl)),
		SHASumsURL:          registryToPull + s.pullRef(t, v, sums, rel.SumsName()),
		SHASumsSignatureURL: registryToPull + s.pullRef(t, v, sums, rel.SignatureName()),
		SHASum:              rel.ZipSHA256(pl),
		SigningKeys:         rel.Downloads[pl].SigningKeys,
	}, nil
}

// providerPullKey names a pull: the repository, the version and the
// origin's SHA256SUMS.
func providerPullKey(repo string, v names.Version, sums digest.Digest) string {
	return "provider " + repo + " " + v.String() + " " + sums.Encoded()
}

// startProvider returns the pull of an origin release, starting it when
// none runs, and the file demand (if any) on its way.
func (pt *pullThrough) startProvider(t pullTarget, v names.Version, rel *ingest.ProviderRelease, demand string) (*pull, *growingFile, error) {
	ref, err := pt.s.providers.Map(t.p)
	if err != nil {
		return nil, nil, err
	}
	key := providerPullKey(ref.Name(), v, rel.SumsDigest())
	return pt.start(key, func() (*pull, error) {
		repo, err := pt.s.client.Open(ref)
		if err != nil {
			return nil, err
		}
		byName := map[string]names.Platform{}
		for _, pl := range rel.Platforms {
			byName[rel.ZipName(pl)] = pl
		}
		files := make([]string, 0, len(byName))
		for name := range byName {
			files = append(files, name)
		}
		p, err := pt.newPull("provider", key, t.origin.String()+" "+v.String(), repo, files, rel.WriteChecksums)
		if err != nil {
			return nil, err
		}
		p.failKey, p.provider = providerFailKey(t, v), rel
		p.open = func(ctx context.Context, name string) (*origin.Body, error) {
			d := rel.Downloads[byName[name]]
			if u, err := d.Resolve(d.DownloadURL); err != nil || u.Scheme != "https" {
				return nil, fmt.Errorf("origin %s names a download location that is not https (%q): refused", t.origin.Hostname, d.DownloadURL)
			}
			return rel.OpenZip(ctx, pt.client, byName[name], pt.opts.MaxFileSize)
		}
		p.want = func(name string) string { return rel.Sums[name] }
		p.mediaType = func(string) string { return oci.MediaTypeZip }
		p.finish = func(ctx context.Context, dir string) (pulled, error) {
			res, err := rel.PushDir(ctx, dir, repo, oci.PushOptions{})
			if err == nil {
				rv := &wire.RegistryVersion{Version: v.String(), Protocols: rel.Protocols}
				for _, pl := range rel.Platforms {
					rv.Platforms = append(rv.Platforms, wire.RegistryPlatform{OS: pl.OS, Arch: pl.Arch})
				}
				pt.recent.add(ref.Name(), storedVersion{version: v, registry: rv})
			}
			return pulled{root: res.Root}, err
		}
		return p, nil
	}, demand)
}

// inflightFile returns a file of a pull in flight (starting its download
// if needed), or nil when no pull runs under key.
func (pt *pullThrough) inflightFile(key, name string) (*pull, *growingFile, error) {
	pt.mu.Lock()
	p := pt.inflight[key]
	pt.mu.Unlock()
	if p == nil {
		return nil, nil, nil
	}
	if name == "" {
		return p, nil, nil
	}
	g, err := p.fetch(name)
	if errors.Is(err, errPullFinished) {
		return nil, nil, nil
	}
	return p, g, err
}

// servePull serves a file named by a pull URL: from the pull in flight,
// from the registry once the release is stored, or by starting the pull.
func (s *Server) servePull(w http.ResponseWriter, r *http.Request) {
	rest, ok := s.archivePath(w, r, PullPrefix)
	if !ok {
		return
	}
	via, rest, _ := strings.Cut(rest, "/")
	req, err := ParseArchivePath(rest)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	t, err := s.pull.target(r, via, req.Provider)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ref, err := s.providers.Map(t.p)
	if err != nil {
		s.fail(w, r, missing(err, "provider "+t.p.String(), "provider %s is not served by this proxy", t.p))
		return
	}
	key := providerPullKey(ref.Name(), req.Version, req.Index)
	s.serveWhilePulling(w, r, func() bool { return s.servePulledFile(w, r, t, req, key) })
}

// serveWhilePulling answers with serve, which returns false when a pull
// finished between two of its steps: one more round then finds the
// release stored.
func (s *Server) serveWhilePulling(w http.ResponseWriter, r *http.Request, serve func() bool) {
	for range 2 {
		if serve() {
			return
		}
	}
	s.fail(w, r, statusErr(http.StatusServiceUnavailable, nil, "the release is being stored; try again"))
}

// servePulledFile tries, in order: the pull in flight, the release it
// stored, the release the registry holds, and the origin. It returns
// false when a pull finished under it (try again).
func (s *Server) servePulledFile(w http.ResponseWriter, r *http.Request, t pullTarget, req ArchiveRequest, key string) bool {
	ctx := r.Context()
	name := archiveFileName(t.p, req)
	demand := ""
	if req.File == ArchiveZip {
		demand = name
	}
	p, g, err := s.pull.inflightFile(key, demand)
	switch {
	case err != nil:
		s.fail(w, r, err)
		return true
	case p != nil:
		s.servePulledFrom(w, r, p.provider, g, req, name)
		return true
	}
	if s.serveStoredPull(w, r, t, req, key) {
		return true
	}
	meta, err := s.pull.providerRelease(ctx, t, req.Version)
	if err != nil {
		s.fail(w, r, err)
		return true
	}
	if meta.SumsDigest() != req.Index {
		s.fail(w, r, notFound("the origin's release of %s %s changed since this URL was handed out: ask for the metadata again", t.origin, req.Version))
		return true
	}
	if req.File == ArchiveZip && !meta.Has(req.Platform) {
		s.fail(w, r, notFound("provider %s %s has no package for %s", t.p, req.Version, req.Platform))
		return true
	}
	if req.File != ArchiveZip {
		s.servePulledFrom(w, r, meta, nil, req, name)
		return true
	}
	_, g, err = s.pull.startProvider(t, req.Version, meta, name)
	switch {
	case errors.Is(err, errPullFinished):
		return false
	case err != nil:
		s.fail(w, r, err)
		return true
	}
	s.servePulledFrom(w, r, meta, g, req, name)
	return true
}

// serveStoredPull serves the file from the release a pull stored, or the
// registry holds; false when the registry does not hold the version.
func (s *Server) serveStoredPull(w http.ResponseWriter, r *http.Request, t pullTarget, req ArchiveRequest, key string) bool {
	ctx := r.Context()
	if res, ok := s.pull.completed.Peek(key); ok {
		rel, err := s.releaseAt(ctx, t.p, req.Version, res.root.Digest)
		if err != nil {
			s.fail(w, r, err)
			return true
		}
		s.serveHeldFile(w, r, rel, req)
		return true
	}
	rel, err := s.release(ctx, t.p, req.Version)
	switch {
	case err != nil && notHeld(err):
		return false
	case err != nil:
		s.fail(w, r, err)
	case !rel.signedByPublisher() || digest.FromBytes(rel.prov.Files.SHA256SUMS.Data) != req.Index:
		s.fail(w, r, notFound("provider %s %s is now held with another SHA256SUMS than this URL names: ask for the metadata again", t.p, req.Version))
	default:
		s.serveHeldFile(w, r, rel, req)
	}
	return true
}

// archiveFileName is the release file name an archive request names.
func archiveFileName(p names.Provider, req ArchiveRequest) string {
	switch req.File {
	case ArchiveSHA256SUMS:
		return names.ProviderSHA256SUMSName(p.Type, req.Version.String())
	case ArchiveSignature:
		return names.ProviderSignatureName(p.Type, req.Version.String())
	}
	return names.ProviderZipName(p.Type, req.Version.String(), req.Platform)
}

// servePulledFrom serves a file of an origin release: SHA256SUMS and its
// signature as verified, a package as it downloads.
func (s *Server) servePulledFrom(w http.ResponseWriter, r *http.Request, rel *ingest.ProviderRelease, g *growingFile, req ArchiveRequest, name string) {
	switch req.File {
	case ArchiveSHA256SUMS:
		s.writeSmallFile(w, r, rel.SHA256SUMS, "text/plain; charset=utf-8")
	case ArchiveSignature:
		s.writeSmallFile(w, r, rel.Signature, "application/octet-stream")
	default:
		s.streamPulled(w, r, g, blobFile{name: name, contentType: "application/zip", pinned: true})
	}
}

// serveHeldFile serves a file of a release the registry holds.
func (s *Server) serveHeldFile(w http.ResponseWriter, r *http.Request, rel *release, req ArchiveRequest) {
	if req.File == ArchiveZip {
		s.serveZip(w, r, rel, req.Platform)
		return
	}
	s.serveChecksums(w, r, rel, req.File)
}

// writeSmallFile answers a small file held in memory.
func (s *Server) writeSmallFile(w http.ResponseWriter, r *http.Request, body []byte, ctype string) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	s.cacheHeaders(w, true)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}
