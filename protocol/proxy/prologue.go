package proxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// The request prologue every protocol handler shares: client
// authentication, GET or HEAD only, the document cache asked before
// anything is parsed, handed-out URLs' signatures checked, the path
// parsed; and the answers it writes.

// responder is what every protocol handler reads with and answers with:
// the store, the document cache, verified blob streams, signed archive
// URLs, errors mapped to statuses (errors.go), logs, metrics and the
// page's record of what was served. Handlers of each protocol family
// (providers, modules, TofuDL) hold one; the Server builds it.
type responder struct {
	opts    *Options
	log     *slog.Logger
	metrics *metrics
	seen    *seen
	store   *store.Store
	docs    *cache.Cache[document]
	urls    *urlSigner // nil without client authentication
	// tokenOK checks an Authorization header against the client tokens
	// (nil without client authentication).
	tokenOK func(header string) bool
}

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
	writeEncoded(w, r, b, []string{strconv.Itoa(len(b))})
}

// writeError answers {"errors":[msg]}, the registry protocols' error form.
func writeError(w http.ResponseWriter, status int, msg string) {
	if rec, ok := w.(*recorder); ok && rec.errMsg == "" {
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

// readRequest is the prologue the protocol handlers share: GET or HEAD
// only (else 405), then the escaped path below prefix parsed (else the
// parser's error: 400, or 404 for what cannot exist). ok is false when
// the request has been answered.
func readRequest[T any](s *responder, w http.ResponseWriter, r *http.Request, prefix string, parse func(string) (T, error)) (req T, ok bool) {
	if !allowRead(w, r) {
		return req, false
	}
	return parseRequest(s, w, r, strings.TrimPrefix(r.URL.EscapedPath(), prefix), parse)
}

// readDocRequest is readRequest for the metadata handlers: a fresh
// cached document under keyPrefix+path answers at once, before any
// parsing (a document is only cached under the key of a valid request).
func readDocRequest[T any](s *responder, w http.ResponseWriter, r *http.Request, keyPrefix, prefix string, parse func(string) (T, error)) (req T, key string, ok bool) {
	if !allowRead(w, r) {
		return req, "", false
	}
	path := r.URL.EscapedPath()
	key = keyPrefix + path
	if s.serveFreshDoc(w, r, key) {
		return req, "", false
	}
	req, ok = parseRequest(s, w, r, strings.TrimPrefix(path, prefix), parse)
	return req, key, ok
}

// signedRequest is readRequest for the URLs the proxy hands out
// (archives): when URLs are signed, the signature is checked first.
func signedRequest[T any](s *responder, w http.ResponseWriter, r *http.Request, prefix string, parse func(string) (T, error)) (req T, ok bool) {
	rest, ok := s.admittedPath(w, r, prefix)
	if !ok {
		return req, false
	}
	return parseRequest(s, w, r, rest, parse)
}

func parseRequest[T any](s *responder, w http.ResponseWriter, r *http.Request, rest string, parse func(string) (T, error)) (T, bool) {
	req, err := parse(rest)
	if err != nil {
		s.fail(w, r, err)
	}
	return req, err == nil
}

// hostname is the registry hostname of a registry protocol request; ok
// is false when the request has been answered (an invalid Host).
func (s *responder) hostname(w http.ResponseWriter, r *http.Request) (string, bool) {
	host, err := s.registryHostname(r)
	if err != nil {
		s.fail(w, r, err)
	}
	return host, err == nil
}

// Authenticate requires a configured bearer token when client
// authentication is on (OpenTofu and Terraform send the token of a
// credentials block for the proxy's hostname as "Authorization: Bearer";
// the scheme is case-insensitive).
func (s *Server) Authenticate(h http.Handler) http.Handler {
	if len(s.tokens) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.validToken(r.Header.Get("Authorization")) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="oci-tofu"`)
		writeError(w, http.StatusUnauthorized, "a valid bearer token is required: add a credentials block for this host to the CLI configuration")
	})
}

func (s *Server) validToken(header string) bool {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	match := 0
	for _, t := range s.tokens {
		match |= subtle.ConstantTimeCompare(sum[:], t[:])
	}
	return match == 1
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

// admittedPath admits a GET or HEAD of an archive URL handed out in metadata
// (checking its signature when client authentication is on) and returns
// the escaped path after prefix; otherwise it has answered the request.
func (s *responder) admittedPath(w http.ResponseWriter, r *http.Request, prefix string) (string, bool) {
	if !allowRead(w, r) {
		return "", false
	}
	escaped := r.URL.EscapedPath()
	if s.urls != nil && !s.bearerAuthorised(r) { // a signed URL, or the client's token
		if err := s.urls.verify(escaped, r.URL.Query()); err != nil {
			s.fail(w, r, err)
			return "", false
		}
	}
	return strings.TrimPrefix(escaped, prefix), true
}

// bearerAuthorised reports whether r carries a client token the proxy
// accepts (client authentication on): such a request needs no signed URL.
func (s *responder) bearerAuthorised(r *http.Request) bool {
	return s.tokenOK != nil && s.tokenOK(r.Header.Get("Authorization"))
}
