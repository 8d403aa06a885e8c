package proxy

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// Client authentication: the bearer tokens of --auth-token-file, compared
// by their sha256 in constant time.

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
		respond.WriteError(w, http.StatusUnauthorized, "a valid bearer token is required: add a credentials block for this host to the CLI configuration")
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

// setUpClientAuth hashes the client tokens and keys the archive URL
// signer (nil without client authentication).
func (s *Server) setUpClientAuth() (*respond.URLSigner, error) {
	if len(s.opts.AuthTokens) == 0 {
		return nil, nil
	}
	for _, t := range s.opts.AuthTokens {
		if t == "" {
			return nil, errors.New("empty client token")
		}
		s.tokens = append(s.tokens, sha256.Sum256([]byte(t)))
	}
	key := s.opts.URLSigningKey
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	return respond.NewURLSigner(key, s.opts.ArchiveURLTTL), nil
}
