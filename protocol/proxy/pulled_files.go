package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/oci-tofu/oci-tofu/protocol/source"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
)

// servePull serves a file named by a pull URL: from the pull in flight,
// from the registry once the release is stored, or by starting the pull.
func (h *pulledProviders) servePull(w http.ResponseWriter, r *http.Request) {
	rest, ok := h.archivePath(w, r, PullPrefix)
	if !ok {
		return
	}
	via, rest, _ := strings.Cut(rest, "/")
	req, err := ParseArchivePath(rest)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	t, err := h.target(r, via, req.Provider)
	if err == nil {
		err = h.pullRefusal(t, req) // pulled_policy.go
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ref, err := h.mappings.Map(t.Served)
	if err != nil {
		h.fail(w, r, source.Missing(err, "provider "+t.Served.String(), "provider %s is not served by this proxy", t.Served))
		return
	}
	key := pullthrough.ProviderPullKey(ref.Name(), req.Version, req.Index)
	h.serveWhilePulling(w, r, func() bool { return h.servePulledFile(w, r, t, req, key) })
}

// serveWhilePulling answers with serve, which returns false when a pull
// finished between two of its steps: one more round then finds the
// release stored.
func (s *responder) serveWhilePulling(w http.ResponseWriter, r *http.Request, serve func() bool) {
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
func (h *pulledProviders) servePulledFile(w http.ResponseWriter, r *http.Request, t pullthrough.Target, req ArchiveRequest, key string) bool {
	ctx := r.Context()
	name := archiveFileName(t.Served, req)
	demand := ""
	if req.File == ArchiveZip {
		demand = name
	}
	p, g, err := h.engine.InflightFile(key, demand)
	switch {
	case err != nil:
		h.fail(w, r, err)
		return true
	case p != nil:
		h.servePulledFrom(w, r, p.Provider(), g, req, name)
		return true
	}
	if h.serveStoredPull(w, r, t, req, key) {
		return true
	}
	meta, err := h.engine.ProviderRelease(ctx, t, req.Version)
	if err != nil {
		h.fail(w, r, err)
		return true
	}
	if meta.SumsDigest() != req.Index {
		h.fail(w, r, source.NotFoundf("the origin's release of %s %s changed since this URL was handed out: ask for the metadata again", t.Origin, req.Version))
		return true
	}
	if req.File == ArchiveZip && !meta.Has(req.Platform) {
		h.fail(w, r, source.NotFoundf("provider %s %s has no package for %s", t.Served, req.Version, req.Platform))
		return true
	}
	if req.File != ArchiveZip {
		h.servePulledFrom(w, r, meta, nil, req, name)
		return true
	}
	_, g, err = h.engine.StartProvider(ctx, t, req.Version, meta, name, true)
	switch {
	case errors.Is(err, pullthrough.ErrFinished):
		return false
	case err != nil:
		h.fail(w, r, err)
		return true
	}
	h.servePulledFrom(w, r, meta, g, req, name)
	return true
}

// serveStoredPull serves the file from the release a pull stored, or the
// registry holds; false when the registry does not hold the version.
func (h *pulledProviders) serveStoredPull(w http.ResponseWriter, r *http.Request, t pullthrough.Target, req ArchiveRequest, key string) bool {
	ctx := r.Context()
	if res, ok := h.engine.Completed(ctx, key); ok {
		rel, err := h.releaseAt(ctx, t.Served, req.Version, res.Root.Digest)
		if err == nil && res.Shared {
			err = h.checkSharedRelease(ctx, rel, req.Index)
		}
		switch {
		case err == nil:
			h.serveHeldFile(w, r, rel, req)
			return true
		case !res.Shared:
			h.fail(w, r, err)
			return true
		}
		h.log.Warn("pull-through: the shared cache names a release the registry does not confirm; set aside",
			"provider", t.Served.String(), "version", req.Version.String(), "index", res.Root.Digest.String(), "error", err)
		h.engine.Distrust(key)
	}
	rel, err := h.release(ctx, t.Served, req.Version)
	switch {
	case err != nil && source.Absent(err):
		return false
	case err != nil:
		h.fail(w, r, err)
	case !rel.signedByPublisher() || digest.FromBytes(rel.prov.Files.SHA256SUMS.Data) != req.Index:
		h.fail(w, r, source.NotFoundf("provider %s %s is now held with another SHA256SUMS than this URL names: ask for the metadata again", t.Served, req.Version))
	default:
		h.serveHeldFile(w, r, rel, req)
	}
	return true
}

// checkSharedRelease checks a release another replica recorded as
// stored (the shared cache is not trusted): read by its digest from the
// registry, it must carry the publisher's SHA256SUMS the URL names.
func (h *pulledProviders) checkSharedRelease(ctx context.Context, rel *release, sums digest.Digest) error {
	if err := h.withProvenance(ctx, rel); err != nil {
		return err
	}
	if !rel.signedByPublisher() || digest.FromBytes(rel.prov.Files.SHA256SUMS.Data) != sums {
		return fmt.Errorf("the release at %s does not carry the SHA256SUMS %s", rel.pv.Index.Digest, sums)
	}
	return nil
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
func (s *responder) servePulledFrom(w http.ResponseWriter, r *http.Request, rel *ingest.ProviderRelease, g *pullthrough.File, req ArchiveRequest, name string) {
	switch req.File {
	case ArchiveSHA256SUMS:
		s.writeSmallFile(w, r, rel.SHA256SUMS, "text/plain; charset=utf-8")
	case ArchiveSignature:
		s.writeSmallFile(w, r, rel.Signature, "application/octet-stream")
	default:
		s.streamPulled(w, r, g, blobFile{name: name, contentType: "application/zip", pinned: true})
	}
}

// writeSmallFile answers a small file held in memory.
func (s *responder) writeSmallFile(w http.ResponseWriter, r *http.Request, body []byte, ctype string) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	s.cacheHeaders(w, true)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// target is the pull-through target a pull URL names, checked as when
// the metadata named it.
func (h *pulledProviders) target(r *http.Request, via string, p names.Provider) (pullthrough.Target, error) {
	host := ""
	if via == pullthrough.ViaRegistry {
		var err error
		if host, err = h.registryHostname(r); err != nil {
			return pullthrough.Target{}, err
		}
	}
	if t, ok := h.engine.TargetOf(via, p, host); ok {
		if via == pullthrough.ViaRegistry {
			if pushed, err := h.heldPushed(r.Context(), p); err != nil || pushed {
				return pullthrough.Target{}, cmp.Or(err, source.NotFoundf("provider %s is held as pushed here: not pulled through", p))
			}
		}
		return t, nil
	}
	return pullthrough.Target{}, source.NotFoundf("provider %s is not pulled through from any allowed origin", p)
}
