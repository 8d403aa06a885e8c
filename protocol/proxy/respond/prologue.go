package respond

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/deliver"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
	"github.com/opencontainers/go-digest"
)

// The request prologue every protocol handler shares: client
// authentication, GET or HEAD only, the document cache asked before
// anything is parsed, handed-out URLs' signatures checked, the path
// parsed; and the answers it writes.

// Responder is what every protocol handler reads with and answers with:
// the store, the document cache, verified blob streams, signed archive
// URLs, errors mapped to statuses (errors.go), logs, metrics and the
// page's record of what was served. Handlers of each protocol family
// (providers, modules, TofuDL) hold one; the Server builds it.
type Responder struct {
	Opts     *Options
	Log      *slog.Logger
	Metrics  *Metrics
	Observer Observer
	Store    *store.Store
	Docs     *cache.Cache[document]
	URLs     *URLSigner // nil without client authentication
	// Bearer is the client r's Authorization header names, ok false when
	// it names none (nil without client authentication); a nil Reader
	// reads everything. err, when ok, is the answer when that client may
	// not be served now (respond.Limited: over its budget).
	Bearer func(r *http.Request) (c Reader, who audit.Caller, ok bool, err error)
	// Tickets, when set, are the budgets the signed URLs' tickets spend.
	Tickets TicketBudgets
	// Refused, when set, is told each request refused a version the
	// policy file denies (Denied.Version set), with who asked: the
	// proxy's policy.denied event naming the client (events.go).
	Refused func(d *source.Denied, who audit.Caller)
	// delivery hands over blobs (protocol/proxy/deliver).
	delivery *deliver.Deliverer
	// scopes remembers the address each document key names.
	scopes scopeMemo
}

func AllowRead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	WriteError(w, r, http.StatusMethodNotAllowed, "only GET and HEAD are supported")
	return false
}

func WriteJSON(w http.ResponseWriter, r *http.Request, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteError(w, r, http.StatusInternalServerError, "encoding the response failed")
		return
	}
	b = append(b, '\n')
	writeEncoded(w, r, b, []string{strconv.Itoa(len(b))})
}

// WriteHTML answers with a page for people (the page at "/", the SBOM
// pages): no caching, no scripts, no framing.
func WriteHTML(w http.ResponseWriter, r *http.Request, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", fmt.Sprint(len(b)))
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Method != http.MethodHead {
		w.Write(b)
	}
}

// WriteError answers r with {"errors":[msg]}, the registry protocols'
// error form, msg noted for its log line.
func WriteError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	noteError(r, msg)
	b, _ := json.Marshal(map[string][]string{"errors": {msg}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", fmt.Sprint(len(b)+1))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// ReadRequest is the prologue the protocol handlers share: GET or HEAD
// only (else 405), then the escaped path below prefix parsed (else the
// parser's error: 400, or 404 for what cannot exist). ok is false when
// the request has been answered.
func ReadRequest[T any](s *Responder, w http.ResponseWriter, r *http.Request, prefix string, parse func(string) (T, error)) (req T, ok bool) {
	if !AllowRead(w, r) {
		return req, false
	}
	return parseRequest(s, w, r, strings.TrimPrefix(r.URL.EscapedPath(), prefix), parse)
}

// ReadDocRequest is readRequest for the metadata handlers: a fresh
// cached document under keyPrefix+path answers at once, before any
// parsing (a document is only cached under the key of a valid request).
// For a client that reads only some addresses (ReaderOf), the path is
// parsed first and the address scope names checked (InScope), so that no
// cached document reaches a client outside its scope.
func ReadDocRequest[T any](s *Responder, w http.ResponseWriter, r *http.Request, keyPrefix, prefix string, parse func(string) (T, error), scope func(T) (names.Kind, string)) (req T, key string, ok bool) {
	if !AllowRead(w, r) {
		return req, "", false
	}
	path := r.URL.EscapedPath()
	key = keyPrefix + path
	if c := ReaderOf(r.Context()); c != nil {
		kind, address, known := s.scopes.lookup(key)
		if !known {
			if req, ok = parseRequest(s, w, r, strings.TrimPrefix(path, prefix), parse); !ok {
				return req, "", false
			}
			kind, address = scope(req)
			s.scopes.remember(key, kind, address)
		}
		EventOf(r.Context()).document(kind, address)
		if !s.InScope(w, r, c, kind, address) || s.serveFreshDoc(w, r, key) {
			return req, "", false
		}
		if known {
			req, ok = parseRequest(s, w, r, strings.TrimPrefix(path, prefix), parse)
			return req, key, ok
		}
		return req, key, true
	}
	if s.Metrics.sinks != nil && s.Metrics.sinks.documents {
		return auditedDocRequest(s, w, r, key, strings.TrimPrefix(path, prefix), parse, scope)
	}
	if s.serveFreshDoc(w, r, key) {
		return req, "", false
	}
	req, ok = parseRequest(s, w, r, strings.TrimPrefix(path, prefix), parse)
	if ev := EventOf(r.Context()); ok && ev != nil {
		kind, address := scope(req)
		ev.document(kind, address)
	}
	return req, key, ok
}

// auditedDocRequest is ReadDocRequest's end when documents are audited:
// the path is parsed before the cache is asked, for the address the
// event names.
func auditedDocRequest[T any](s *Responder, w http.ResponseWriter, r *http.Request, key, rest string, parse func(string) (T, error), scope func(T) (names.Kind, string)) (req T, _ string, ok bool) {
	if req, ok = parseRequest(s, w, r, rest, parse); !ok {
		return req, "", false
	}
	kind, address := scope(req)
	EventOf(r.Context()).document(kind, address)
	if s.serveFreshDoc(w, r, key) {
		return req, "", false
	}
	return req, key, true
}

// SignedRequest is readRequest for the URLs the proxy hands out
// (archives): when URLs are signed, the signature is checked first, or
// the client's bearer token and then its scope (the address scope
// names).
func SignedRequest[T any](s *Responder, w http.ResponseWriter, r *http.Request, prefix string, parse func(string) (T, error), scope func(T) (names.Kind, string)) (req T, ok bool) {
	rest, c, ok := s.AuthorizedPath(w, r, prefix)
	if !ok {
		return req, false
	}
	if req, ok = parseRequest(s, w, r, rest, parse); !ok {
		return req, false
	}
	if c != nil {
		kind, address := scope(req)
		return req, s.InScope(w, r, c, kind, address)
	}
	return req, true
}

func parseRequest[T any](s *Responder, w http.ResponseWriter, r *http.Request, rest string, parse func(string) (T, error)) (T, bool) {
	req, err := parse(rest)
	if err != nil {
		s.Fail(w, r, err)
	}
	return req, err == nil
}

// Hostname is the registry Hostname of a registry protocol request; ok
// is false when the request has been answered (an invalid Host).
func (s *Responder) Hostname(w http.ResponseWriter, r *http.Request) (string, bool) {
	host, err := s.RegistryHostname(r)
	if err != nil {
		s.Fail(w, r, err)
	}
	return host, err == nil
}

// RegistryHostname is the ${hostname} of providers and modules served
// through the registry protocols.
func (s *Responder) RegistryHostname(r *http.Request) (string, error) {
	if s.Opts.RegistryHostname != "" {
		return s.Opts.RegistryHostname, nil
	}
	host := HostOnly(r.Host)
	return ParseHostname(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
}

// AuthorizedPath checks that a GET or HEAD of an archive URL handed out
// in metadata may be answered (its signature, when client
// authentication is on, unless the client's bearer token authorises it:
// c is then that client when it reads only some addresses) and returns
// the escaped path after prefix; otherwise it has answered the request.
func (s *Responder) AuthorizedPath(w http.ResponseWriter, r *http.Request, prefix string) (rest string, c Reader, ok bool) {
	if !AllowRead(w, r) {
		return "", nil, false
	}
	escaped := r.URL.EscapedPath()
	if s.URLs != nil {
		ev := EventOf(r.Context())
		c, who, bearer, err := s.bearer(r)
		if bearer && err != nil {
			ev.Identify(who)
			s.Fail(w, r, err)
			return "", nil, false
		}
		if !bearer { // a signed URL, or the client's token
			q := r.URL.Query()
			if err := s.URLs.verify(escaped, q); err != nil {
				s.Fail(w, r, err)
				return "", nil, false
			}
			var kind string
			who, kind = s.URLs.handedTo(q)
			ev.Identify(who)
			if err := s.spendTicket(who, kind); err != nil {
				s.Fail(w, r, err)
				return "", nil, false
			}
		}
		ev.Identify(who)
		return strings.TrimPrefix(escaped, prefix), c, true
	}
	return strings.TrimPrefix(escaped, prefix), nil, true
}

// New is a Responder answering for a server with opts, logging to log,
// counting in m, its documents cached as docs says (its Name, TTL,
// bounds and observer), the URLs it hands out signed by urls (nil: not
// signed).
func New(opts Options, log *slog.Logger, m *Metrics, docs cache.Options, urls *URLSigner) *Responder {
	s := &Responder{Opts: &opts, Log: log, Metrics: m, Docs: cache.New[document](docs), URLs: urls}
	s.delivery = &deliver.Deliverer{StallTimeout: opts.StallTimeout, Redirect: opts.RedirectArchives, Private: urls != nil,
		Log: log, Counters: m.deliveryCounters(), Fail: s.Fail}
	return s
}

// errBadPath marks a request whose path cannot name anything (400).
var errBadPath = errors.New("bad request path")

// BadPath is a path that cannot name anything (400), saying why.
func BadPath(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadPath, fmt.Sprintf(format, args...))
}

// MaxPathLen bounds the request paths we parse.
const MaxPathLen = 1024

// SplitPath splits an escaped path (after the handler's prefix) into
// unescaped segments. Every segment must be non-empty, must not be "." or
// "..", and must not contain an encoded "/" or "\", a NUL or any control
// character: none of the names these protocols carry can, so such paths are
// refused rather than interpreted.
func SplitPath(escaped string, n int) ([]string, error) {
	if len(escaped) > MaxPathLen {
		return nil, BadPath("path longer than %d bytes", MaxPathLen)
	}
	raw := strings.Split(escaped, "/")
	if len(raw) != n {
		return nil, BadPath("want %d path segments, got %d", n, len(raw))
	}
	out := make([]string, n)
	for i, s := range raw {
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, BadPath("segment %q: %v", s, err)
		}
		if u == "" || u == "." || u == ".." {
			return nil, BadPath("empty, \".\" or \"..\" path segment")
		}
		for _, c := range u {
			if c < 0x20 || c == 0x7f || c == '/' || c == '\\' {
				return nil, BadPath("segment %q holds a slash or control character", s)
			}
		}
		out[i] = u
	}
	return out, nil
}

func ParseName(what, s string) (string, error) {
	s = strings.ToLower(s)
	if !names.ValidProviderPart(s) {
		return "", BadPath("invalid provider %s %q", what, s)
	}
	return s, nil
}

func ParseHostname(s string) (string, error) {
	s = strings.ToLower(s)
	if !names.ValidHostname(s) {
		return "", BadPath("invalid hostname %q", s)
	}
	return s, nil
}

func ParseProvider(host, ns, typ string) (names.Provider, error) {
	var p names.Provider
	var err error
	if p.Hostname, err = ParseHostname(host); err != nil {
		return p, err
	}
	if p.Namespace, err = ParseName("namespace", ns); err != nil {
		return p, err
	}
	if p.Type, err = ParseName("type", typ); err != nil {
		return p, err
	}
	return p, nil
}

func ParseVersion(s string) (names.Version, error) {
	v, err := names.ParseVersion(s)
	if err != nil {
		return names.Version{}, BadPath("%v", err)
	}
	return v, nil
}

// CheckRawPath refuses a path, escaped or not, that is too long, not
// absolute, or has dot segments or empty segments.
func CheckRawPath(u *url.URL) error { return CheckPaths(u.EscapedPath(), u.Path) }

// CheckPaths is CheckRawPath of a path's escaped and unescaped forms.
func CheckPaths(escaped, path string) error {
	if err := checkPathSegments(escaped); err != nil || path == escaped {
		return err
	}
	return checkPathSegments(path)
}

func checkPathSegments(p string) error {
	if len(p) > MaxPathLen {
		return BadPath("path longer than %d bytes", MaxPathLen)
	}
	if !strings.HasPrefix(p, "/") {
		return BadPath("path must be absolute")
	}
	for rest := p[1:]; ; {
		seg, after, more := strings.Cut(rest, "/")
		if isDotSegment(seg) {
			return BadPath("dot segments are not allowed in paths")
		}
		if !more {
			break
		}
		if seg == "" {
			return BadPath("empty path segment")
		}
		rest = after
	}
	return nil
}

// isDotSegment says whether seg is ".", "..", or either with its dots
// escaped ("%2e", "%2E%2e", …). Most segments are longer than six bytes
// or start with neither '.' nor '%', and are told at once.
func isDotSegment(seg string) bool {
	if len(seg) == 0 || len(seg) > 6 || seg[0] != '.' && seg[0] != '%' {
		return false
	}
	return seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e")
}

// ParseHexDigest is a path segment naming a sha256 digest: 64
// lowercase hex digits.
func ParseHexDigest(s string) (digest.Digest, error) {
	d := digest.NewDigestFromEncoded(digest.SHA256, s)
	if len(s) != 64 || strings.ToLower(s) != s || d.Validate() != nil {
		return "", BadPath("invalid digest %q", s)
	}
	return d, nil
}

// Deliver answers with a blob a source handed over (deliver.Deliverer).
func (s *Responder) Deliver(w http.ResponseWriter, r *http.Request, b *source.Blob) {
	EventOf(r.Context()).blob(b)
	s.delivery.Deliver(w, r, b)
}

// LeftOut is nil when a listing may leave out version v (of what, named)
// for err — it is denied, gone, or not a valid artifact of its kind —,
// logging why; otherwise err, which fails the listing.
func (s *Responder) LeftOut(what string, v names.Version, err error) error {
	if err == nil {
		return nil
	}
	var d *source.Denied
	switch {
	case errors.As(err, &d):
		s.Log.Info("version left out", "what", what, "version", v.String(), "rule", d.Rule, "reason", d.Reason)
		return nil
	case source.Absent(err), store.Skippable(err):
		return nil
	}
	return err
}
