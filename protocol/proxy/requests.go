package proxy

import (
	"net/http"
	"strings"
)

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
