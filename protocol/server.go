package protocol

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Paths the server answers on. The archive URLs it hands out are relative
// to the metadata that names them, so a path-prefixing reverse proxy in
// front keeps working.
const (
	DiscoveryPath = "/.well-known/terraform.json"
	MirrorPrefix  = "/v1/mirror/"
	ProvidersPath = "/v1/providers/"
	ArchivePrefix = "/v1/archives/"
)

// Options configure a Server. Client is required, and at least one of
// ProviderTemplate, ModuleTemplate and TofuRepository.
type Options struct {
	// Client reaches registries (credentials, TLS trust, timeouts).
	Client *oci.Client
	// ProviderTemplate maps hostname/namespace/type to a repository, in the
	// syntax of OpenTofu's oci_mirror repository_template. Nil: no
	// providers (mirror, providers.v1, archives).
	ProviderTemplate *oci.Template
	// ModuleTemplate maps hostname/namespace/name/system to a repository
	// of module packages, served as modules.v1. Nil: no modules.
	ModuleTemplate *oci.Template
	// TofuRepository holds OpenTofu releases (oci-tofu push tofu), served
	// as a TofuDL mirror under /tofu/. Nil: none.
	TofuRepository *oci.Reference
	// Include and Exclude filter provider addresses ("host/namespace/type",
	// with path.Match wildcards such as "example.com/*/*"). Empty Include
	// allows all.
	Include, Exclude []string
	// ProviderMappings are more templates, each with its own filters, as
	// the oci_mirror blocks of an OpenTofu CLI configuration: a provider
	// maps to the first whose filters admit it. ProviderTemplate, when set,
	// comes first with Include and Exclude.
	ProviderMappings []ProviderMapping
	// RegistryHostname is the ${hostname} the Provider Registry Protocol
	// expands templates with. Empty: the host name the client used to reach
	// the proxy, without port (the hostname of its provider addresses).
	RegistryHostname string
	// Signer, when set, signs a SHA256SUMS generated from the OCI digests
	// for releases that carry no publisher signature, so the registry
	// protocol can offer them.
	Signer *pgp.Signer
	// AuthTokens, when non-empty, are the bearer tokens clients must send
	// (from credentials blocks) for metadata; archive URLs are then
	// HMAC-signed and expire after ArchiveURLTTL.
	AuthTokens []string
	// URLSigningKey is the HMAC key for archive URLs: share it between
	// replicas. Random when empty.
	URLSigningKey []byte
	ArchiveURLTTL time.Duration // default 1h
	// TagTTL is how long tag lists and tag→digest resolutions are cached
	// (default 30s). Content addressed by digest is cached until evicted.
	TagTTL time.Duration
	// CacheEntries bounds each cache (default 4096 entries).
	CacheEntries int
	// UpstreamTimeout bounds each metadata call to the registry (default 30s).
	UpstreamTimeout time.Duration
	// StallTimeout aborts an archive stream that makes no progress, either
	// from the registry or to the client, for this long (default 60s).
	StallTimeout time.Duration
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
}

// Server serves the discovery document, the Provider Network Mirror
// Protocol, the Provider Registry Protocol and archive downloads, from
// provider artifacts in OCI repositories. More handler sets (modules.v1)
// can be added with Mount.
type Server struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	src     *source
	urls    *urlSigner
	tokens  [][32]byte

	mu       sync.RWMutex
	mux      *http.ServeMux
	services map[string]string
}

// New builds a Server.
func New(opts Options) (*Server, error) {
	if opts.Client == nil {
		return nil, errors.New("protocol.New: Client is required")
	}
	if opts.ProviderTemplate != nil {
		opts.ProviderMappings = append([]ProviderMapping{{Template: opts.ProviderTemplate, Include: opts.Include, Exclude: opts.Exclude}}, opts.ProviderMappings...)
	}
	if len(opts.ProviderMappings) == 0 && opts.ModuleTemplate == nil && opts.TofuRepository == nil {
		return nil, errors.New("protocol.New: configure at least one of ProviderTemplate, ModuleTemplate and TofuRepository")
	}
	if opts.TofuRepository != nil && opts.TofuRepository.Reference != "" {
		return nil, errors.New("protocol.New: TofuRepository must name a repository without a tag or digest")
	}
	if opts.TagTTL <= 0 {
		opts.TagTTL = 30 * time.Second
	}
	if opts.CacheEntries <= 0 {
		opts.CacheEntries = 4096
	}
	if opts.UpstreamTimeout <= 0 {
		opts.UpstreamTimeout = 30 * time.Second
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = 60 * time.Second
	}
	if opts.ArchiveURLTTL <= 0 {
		opts.ArchiveURLTTL = time.Hour
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	var mappings []providerMapping
	for _, m := range opts.ProviderMappings {
		if m.Template == nil {
			return nil, errors.New("protocol.New: a provider mapping without a template")
		}
		for _, p := range append(append([]string(nil), m.Include...), m.Exclude...) {
			if _, err := pathMatch(p, "a/b/c"); err != nil {
				return nil, fmt.Errorf("invalid provider pattern %q: %w", p, err)
			}
		}
		mappings = append(mappings, providerMapping{template: m.Template, include: lower(m.Include), exclude: lower(m.Exclude)})
	}
	if opts.RegistryHostname != "" {
		h, err := parseHostname(opts.RegistryHostname)
		if err != nil {
			return nil, fmt.Errorf("registry hostname: %w", err)
		}
		opts.RegistryHostname = h
	}
	m := newMetrics()
	n, ttl := opts.CacheEntries, opts.TagTTL
	s := &Server{
		opts:    opts,
		log:     opts.Logger,
		metrics: m,
		src: &source{
			client: opts.Client, mappings: mappings,
			timeout: opts.UpstreamTimeout, log: opts.Logger, metrics: m, signer: opts.Signer,
			repos:    newCache[oci.ReadOnlyRepository]("repositories", n, ttl, m),
			tags:     newCache[versionsList]("tags", n, ttl, m),
			resolved: newCache[descriptor]("resolve", n, ttl, m),
			indexes:  newCache[*oci.ProviderVersion]("indexes", n, 0, m),
			zips:     newCache[descriptor]("platform_manifests", n, 0, m),
			provs:    newCache[*provenance]("provenance", n, 0, m),
			sums:     newCache[*checksums]("checksums", n, 0, m),
		},
		mux:      http.NewServeMux(),
		services: map[string]string{},
	}
	if len(opts.AuthTokens) > 0 {
		for _, t := range opts.AuthTokens {
			if t == "" {
				return nil, errors.New("empty client token")
			}
			s.tokens = append(s.tokens, sha256.Sum256([]byte(t)))
		}
		key := opts.URLSigningKey
		if len(key) == 0 {
			key = make([]byte, 32)
			if _, err := rand.Read(key); err != nil {
				return nil, err
			}
		}
		s.urls = &urlSigner{key: key, ttl: opts.ArchiveURLTTL, now: time.Now}
	}
	s.mux.Handle("/healthz", s.instrument("healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})))
	s.mux.Handle("/metrics", m.handler())
	s.mux.Handle(DiscoveryPath, s.instrument("discovery", http.HandlerFunc(s.serveDiscovery)))
	if len(mappings) > 0 {
		s.Mount("", MirrorPrefix, "mirror", s.Authenticate(http.HandlerFunc(s.serveMirror)))
		s.Mount("providers.v1", ProvidersPath, "providers", s.Authenticate(http.HandlerFunc(s.serveRegistry)))
		s.Mount("", ArchivePrefix, "archives", http.HandlerFunc(s.serveArchive))
	}
	if opts.ModuleTemplate != nil {
		s.mountModules(opts.ModuleTemplate)
	}
	if opts.TofuRepository != nil {
		s.mountTofu(*opts.TofuRepository)
	}
	return s, nil
}

func lower(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.ToLower(s)
	}
	return out
}

// Mount serves h under prefix (which must end in "/"), instrumented with
// metrics and logs under the handler name. A non-empty serviceID
// advertises prefix in the discovery document, e.g. "modules.v1".
// Handlers that need client authentication wrap themselves with
// Authenticate.
func (s *Server) Mount(serviceID, prefix, name string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mux.Handle(prefix, s.instrument(name, h))
	if serviceID != "" {
		s.services[serviceID] = prefix
	}
}

// Logger is the server's logger, for mounted handlers.
func (s *Server) Logger() *slog.Logger { return s.log }

// ServeHTTP refuses paths with dot segments or empty segments before
// routing (http.ServeMux would otherwise redirect them to a cleaned path),
// then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := checkRawPath(r.URL); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.mu.RLock()
	mux := s.mux
	s.mu.RUnlock()
	mux.ServeHTTP(w, r)
}

func checkRawPath(u *url.URL) error {
	for _, p := range []string{u.EscapedPath(), u.Path} {
		if len(p) > maxPathLen {
			return badPath("path longer than %d bytes", maxPathLen)
		}
		if !strings.HasPrefix(p, "/") {
			return badPath("path must be absolute")
		}
		for rest := p[1:]; ; {
			seg, tail, more := strings.Cut(rest, "/")
			if seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e") {
				return badPath("dot segments are not allowed in paths")
			}
			if !more {
				break
			}
			rest = tail
		}
		if strings.Contains(p[1:], "//") {
			return badPath("empty path segment")
		}
	}
	return nil
}

func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	if !allowRead(w, r) {
		return
	}
	s.mu.RLock()
	doc := make(map[string]string, len(s.services))
	for k, v := range s.services {
		doc[k] = v
	}
	s.mu.RUnlock()
	writeJSON(w, r, doc)
}

// Authenticate requires a configured bearer token when client
// authentication is on (OpenTofu and Terraform send the token of a
// credentials block for the proxy's hostname as "Authorization: Bearer").
func (s *Server) Authenticate(h http.Handler) http.Handler {
	if len(s.tokens) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok {
			sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
			match := 0
			for _, t := range s.tokens {
				match |= subtle.ConstantTimeCompare(sum[:], t[:])
			}
			if match == 1 {
				h.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="oci-tofu"`)
		writeError(w, http.StatusUnauthorized, "a valid bearer token is required: add a credentials block for this host to the CLI configuration")
	})
}

// instrument counts, times and logs requests. Logs carry the method, the
// path without query (archive URL signatures stay out) and the outcome;
// never headers.
func (s *Server) instrument(name string, h http.Handler) http.Handler {
	getOK := s.metrics.requests.WithLabelValues(name, http.MethodGet, "200")
	latency := s.metrics.latency.WithLabelValues(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		defer func() {
			p := recover()
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			if p != nil {
				status = 0 // aborted
			}
			d := time.Since(start)
			if status == http.StatusOK && r.Method == http.MethodGet {
				getOK.Inc() // pre-resolved: label lookups cost more than the cached answer
				latency.Observe(d.Seconds())
			} else {
				s.metrics.observe(name, r.Method, status, d)
			}
			level := slog.LevelInfo
			if status >= 500 || status == 0 {
				level = slog.LevelWarn
			}
			if !s.log.Enabled(r.Context(), level) {
				if p != nil {
					panic(p)
				}
				return
			}
			attrs := []slog.Attr{
				slog.String("handler", name), slog.String("method", r.Method), slog.String("path", r.URL.EscapedPath()),
				slog.Int("status", status), slog.Int64("bytes", rec.bytes), slog.Duration("duration", d),
				slog.String("remote", remoteIP(r)),
			}
			if rec.errMsg != "" {
				attrs = append(attrs, slog.String("error", rec.errMsg))
			}
			s.log.LogAttrs(r.Context(), level, "request", attrs...)
			if p != nil {
				panic(p)
			}
		}()
		h.ServeHTTP(rec, r)
	})
}

func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// recorder remembers the status and size of a response.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	errMsg string
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func allowRead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeError(w, http.StatusMethodNotAllowed, "only GET and HEAD are supported")
	return false
}

func writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the response failed")
		return
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		return
	}
	w.Write(b)
}

// writeError answers {"errors":[msg]}, the registry protocols' error form.
func writeError(w http.ResponseWriter, status int, msg string) {
	if rec, ok := w.(*recorder); ok {
		rec.errMsg = msg
	}
	b, _ := json.Marshal(map[string][]string{"errors": {msg}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(b)+1))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// fail answers an error from the source: its status and message, or 500.
// Details of upstream failures go to the log only.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		// The client went away; nobody reads the answer.
		writeError(w, 499, "client closed the request")
		return
	}
	var he *httpError
	switch {
	case errors.As(err, &he):
		if rec, ok := w.(*recorder); ok && he.err != nil {
			defer func() { rec.errMsg = he.Error() }()
		}
		writeError(w, he.status, he.msg)
	case errors.Is(err, errBadPath):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		s.metrics.upstreamError(upstreamKind(err))
		he := upstreamError(err, "serving the request").(*httpError)
		if rec, ok := w.(*recorder); ok {
			defer func() { rec.errMsg = he.Error() }()
		}
		writeError(w, he.status, he.msg)
	}
}

// pathMatch matches a provider address pattern.
func pathMatch(pattern, addr string) (bool, error) {
	return pathMatchImpl(pattern, addr)
}
