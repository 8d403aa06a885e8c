package proxy

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// How a provider was served, on the page.
const (
	viaMirror   = "network mirror"
	viaRegistry = "registry protocol"
)

// providerSource builds the provider protocols' documents: heldProviders
// from what the registry holds; with pull-through, pulledProviders wraps
// it with what allow-listed origins offer. Handlers ask it and do not
// know which answered.
type providerSource interface {
	// networkMirrorIndex is the network mirror's index.json.
	networkMirrorIndex(ctx context.Context, p names.Provider) (any, time.Time, error)
	// networkMirrorVersion is the network mirror's <version>.json.
	networkMirrorVersion(ctx context.Context, p names.Provider, v names.Version) (any, error)
	// versionsDoc is the registry protocol's versions document; shown is
	// the address as the client wrote it, for the page.
	versionsDoc(ctx context.Context, p names.Provider, shown string) (any, time.Time, error)
	// downloadDoc is the registry protocol's download document.
	downloadDoc(ctx context.Context, p names.Provider, req RegistryRequest) (any, error)
}

// providerHandlers serve the Provider Network Mirror Protocol, the
// Provider Registry Protocol (providers.v1) and the archives their
// documents name.
type providerHandlers struct {
	*responder
	source providerSource
	held   archiveSource // reads the archives that URLs pin by index digest
}

// archiveSource finds the release an archive URL pins by index digest and
// serves its files: heldProviders, or mergedProviders over several
// mappings.
type archiveSource interface {
	releaseAt(ctx context.Context, p names.Provider, v names.Version, index digest.Digest) (*release, error)
	serveHeldFile(w http.ResponseWriter, r *http.Request, rel *release, req ArchiveRequest)
}

// mountProviders adds the network mirror, the registry protocol
// (providers.v1) and the archive downloads, and with pull-through the
// files of releases being pulled.
func (s *Server) mountProviders(mappings store.ProviderMappings) {
	o := s.opts
	held := &heldProviders{responder: s.out, mappings: mappings,
		generated: cache.New[*checksums](cache.Options{Name: "generated_checksums", FailureTTL: o.Store.FailureTTL, MaxEntries: o.Store.CacheEntries,
			MaxCost: budgetOf(o).generated, EntryCost: store.EntryCost, Timeout: o.Store.Timeout, Observe: s.metrics.observeCache})}
	s.held = held
	h := &providerHandlers{responder: s.out, source: held, held: held}
	if len(mappings) > 1 && !s.pull.Providers() {
		merged := newMergedProviders(held) // merged.go
		h.source, h.held = merged, merged
	}
	if s.pull.Providers() {
		pulled := &pulledProviders{heldProviders: held, engine: s.pull}
		h.source = pulled
		s.Mount("", PullPrefix, "pull", http.HandlerFunc(pulled.servePull))
	}
	s.Mount("", MirrorPrefix, "mirror", s.Authenticate(http.HandlerFunc(h.serveMirror)))
	s.Mount("providers.v1", ProvidersPath, "providers", s.Authenticate(http.HandlerFunc(h.serveRegistry)))
	s.Mount("", ArchivePrefix, "archives", http.HandlerFunc(h.serveArchive))
}

// serveMirror answers the Provider Network Mirror Protocol.
func (h *providerHandlers) serveMirror(w http.ResponseWriter, r *http.Request) {
	req, key, ok := readDocRequest(h.responder, w, r, "", MirrorPrefix, ParseMirrorPath)
	if !ok {
		return
	}
	h.serveDoc(w, r, key, func(ctx context.Context) (any, time.Time, error) {
		if req.Index {
			return h.source.networkMirrorIndex(ctx, req.Provider)
		}
		doc, err := h.source.networkMirrorVersion(ctx, req.Provider, req.Version)
		return doc, time.Time{}, err
	})
}

// registryHostname is the ${hostname} of providers and modules served
// through the registry protocols.
func (s *responder) registryHostname(r *http.Request) (string, error) {
	if s.opts.RegistryHostname != "" {
		return s.opts.RegistryHostname, nil
	}
	host := hostOnly(r.Host)
	return parseHostname(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
}

// serveRegistry answers the Provider Registry Protocol, the proxy being
// the origin registry of its providers.
func (h *providerHandlers) serveRegistry(w http.ResponseWriter, r *http.Request) {
	host, ok := h.hostname(w, r)
	if !ok {
		return
	}
	req, key, ok := readDocRequest(h.responder, w, r, host+" ", ProvidersPath, ParseRegistryPath)
	if !ok {
		return
	}
	p := names.Provider{Hostname: host, Namespace: req.Namespace, Type: req.Type}
	// The address as clients write it (with the port they use), for the page.
	shown := p.String()
	if h.opts.RegistryHostname == "" {
		shown = strings.ToLower(r.Host) + "/" + req.Namespace + "/" + req.Type
	}
	h.serveDoc(w, r, key, func(ctx context.Context) (any, time.Time, error) {
		if !req.Download {
			return h.source.versionsDoc(ctx, p, shown)
		}
		doc, err := h.source.downloadDoc(ctx, p, req)
		return doc, time.Time{}, err
	})
}

// serveArchive serves a zip, SHA256SUMS or signature named by a URL from
// the metadata.
func (h *providerHandlers) serveArchive(w http.ResponseWriter, r *http.Request) {
	req, ok := signedRequest(h.responder, w, r, ArchivePrefix, ParseArchivePath)
	if !ok {
		return
	}
	rel, err := h.held.releaseAt(r.Context(), req.Provider, req.Version, req.Index)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.held.serveHeldFile(w, r, rel, req)
}

// archivePath admits a GET or HEAD of an archive URL handed out in metadata
// (checking its signature when client authentication is on) and returns
// the escaped path after prefix; otherwise it has answered the request.
func (s *responder) archivePath(w http.ResponseWriter, r *http.Request, prefix string) (string, bool) {
	if !allowRead(w, r) {
		return "", false
	}
	escaped := r.URL.EscapedPath()
	if s.urls != nil && !s.bearerAuthorised(r) { // a signed URL, or the client's token (module_direct.go)
		if err := s.urls.verify(escaped, r.URL.Query()); err != nil {
			s.fail(w, r, err)
			return "", false
		}
	}
	return strings.TrimPrefix(escaped, prefix), true
}

// cacheHeaders says how long HTTP caches may keep a file: files pinned to
// a digest never change, unless the URL is a signed, private one.
func (s *responder) cacheHeaders(w http.ResponseWriter, pinned bool) {
	switch {
	case s.urls != nil:
		w.Header().Set("Cache-Control", "private, no-store")
	case pinned:
		w.Header().Set("Cache-Control", "public, max-age=86400, immutable")
	default:
		// Named by version, not digest: a re-pushed release must not be
		// served stale from HTTP caches.
		w.Header().Set("Cache-Control", "no-cache")
	}
}
