package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TokenServer is a Docker-style token service (the "Bearer realm" of a
// token-auth registry): for HTTP basic credentials it knows, or for none,
// it issues an ES256-signed JWT granting the scopes asked for (none to an
// anonymous client). Distribution v3 verifies the tokens against the JWKS
// file the server writes (the key is named by the token's "kid").
type TokenServer struct {
	// URL is the realm, https://localhost:PORT/token.
	URL string
	// Service is the token audience: the registry's auth.token.service.
	Service string
	// Issuer is the "iss" claim: the registry's auth.token.issuer.
	Issuer string
	// JWKSFile holds the public key: the registry's auth.token.jwks.
	JWKSFile string

	key *ecdsa.PrivateKey
	kid string

	mu       sync.Mutex
	users    map[string]string
	repos    map[string][]string // user → the repository prefixes it is granted (none: all)
	requests []TokenRequest
}

// AddUser lets user in with password, granted only the repositories
// under prefixes ("team-a/" for team-a/…); without prefixes, every
// repository. Scopes outside them are left out of its tokens, as
// Harbor leaves out a project's to a robot of another.
func (s *TokenServer) AddUser(user, password string, prefixes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[user] = password
	if len(prefixes) > 0 {
		s.repos[user] = prefixes
	}
}

// grants keeps of access what user is granted.
func (s *TokenServer) grants(user string, access []tokenAccess) []tokenAccess {
	s.mu.Lock()
	prefixes := s.repos[user]
	s.mu.Unlock()
	if len(prefixes) == 0 {
		return access
	}
	var out []tokenAccess
	for _, a := range access {
		for _, p := range prefixes {
			if strings.HasPrefix(a.Name, p) {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// TokenRequest is one request the token server answered.
type TokenRequest struct {
	Method  string
	User    string   // "" for anonymous requests
	Scopes  []string // as asked, e.g. "repository:providers/test/hello:pull,push"
	Granted bool     // false: refused (unknown user or wrong password)
}

// tokenLifetime is how long issued tokens are valid.
const tokenLifetime = 5 * time.Minute

// StartTokenServer starts a token service for service, knowing users (user
// name → password); it stops when the test ends.
func StartTokenServer(t testing.TB, service string, users map[string]string) *TokenServer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := &TokenServer{Service: service, Issuer: "oci-tofu-test-token-server", users: map[string]string{}, repos: map[string][]string{}, key: key}
	for u, pw := range users {
		s.users[u] = pw
	}
	s.kid = keyID(&key.PublicKey)
	s.JWKSFile = filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(s.JWKSFile, s.jwks(), 0o600); err != nil {
		t.Fatal(err)
	}
	l := listenLoopback(t)
	s.URL = "https://" + loopbackHost(l) + "/token"
	serveTLS(t, l, http.HandlerFunc(s.serveToken))
	return s
}

// Requests returns the token requests answered so far.
func (s *TokenServer) Requests() []TokenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]TokenRequest(nil), s.requests...)
}

// serveToken answers GET with basic auth (Docker's token protocol) and
// POST with grant_type=password (the OAuth2 form some clients use).
func (s *TokenServer) serveToken(w http.ResponseWriter, r *http.Request) {
	var user, password string
	var hasCreds bool
	var scopes []string
	switch r.Method {
	case http.MethodGet:
		user, password, hasCreds = r.BasicAuth()
		scopes = r.URL.Query()["scope"]
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "password" {
			writeRegistryError(w, http.StatusBadRequest, "UNSUPPORTED", "only grant_type=password is supported here")
			return
		}
		user, password, hasCreds = r.PostForm.Get("username"), r.PostForm.Get("password"), true
		scopes = strings.Fields(r.PostForm.Get("scope"))
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	granted := !hasCreds || s.knows(user, password)
	s.record(TokenRequest{Method: r.Method, User: user, Scopes: scopes, Granted: granted})
	if !granted {
		w.Header().Set("WWW-Authenticate", `Basic realm="oci-tofu-test-token-server"`)
		writeRegistryError(w, http.StatusUnauthorized, "UNAUTHORIZED", "invalid user name or password")
		return
	}
	var access []tokenAccess
	if hasCreds {
		access = s.grants(user, parseScopes(scopes))
	}
	token, err := s.sign(user, access)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"token":        token,
		"access_token": token,
		"expires_in":   int(tokenLifetime.Seconds()),
		"issued_at":    time.Now().UTC().Format(time.RFC3339),
	})
}

func (s *TokenServer) knows(user, password string) bool {
	s.mu.Lock()
	want, ok := s.users[user]
	s.mu.Unlock()
	return ok && subtle.ConstantTimeCompare([]byte(want), []byte(password)) == 1
}

func (s *TokenServer) record(req TokenRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
}

// tokenAccess is one entry of a token's "access" claim.
type tokenAccess struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// parseScopes reads scopes of the form type:name:action,action (the name
// may hold colons); malformed ones are ignored, as registries ignore them.
func parseScopes(scopes []string) []tokenAccess {
	var out []tokenAccess
	for _, joined := range scopes {
		for _, scope := range strings.Fields(joined) {
			typ, rest, ok := strings.Cut(scope, ":")
			i := strings.LastIndex(rest, ":")
			if !ok || i <= 0 {
				continue
			}
			out = append(out, tokenAccess{Type: typ, Name: rest[:i], Actions: strings.Split(rest[i+1:], ",")})
		}
	}
	return out
}

// sign issues a JWT for subject with the given access.
func (s *TokenServer) sign(subject string, access []tokenAccess) (string, error) {
	now := time.Now()
	if access == nil {
		access = []tokenAccess{}
	}
	header, _ := json.Marshal(map[string]string{"alg": "ES256", "typ": "JWT", "kid": s.kid})
	claims, _ := json.Marshal(map[string]any{
		"iss":    s.Issuer,
		"sub":    subject,
		"aud":    s.Service,
		"exp":    now.Add(tokenLifetime).Unix(),
		"nbf":    now.Add(-time.Second).Unix(),
		"iat":    now.Unix(),
		"jti":    randomHex(8),
		"access": access,
	})
	signingInput := b64url(header) + "." + b64url(claims)
	sum := sha256.Sum256([]byte(signingInput))
	der, err := ecdsa.SignASN1(rand.Reader, s.key, sum[:])
	if err != nil {
		return "", err
	}
	var sig struct{ R, S *big.Int }
	if _, err := asn1.Unmarshal(der, &sig); err != nil {
		return "", err
	}
	raw := make([]byte, 64) // JWS ES256: R and S, 32 bytes each
	sig.R.FillBytes(raw[:32])
	sig.S.FillBytes(raw[32:])
	return signingInput + "." + b64url(raw), nil
}

// jwks is the JSON Web Key Set holding the server's public key.
func (s *TokenServer) jwks() []byte {
	point, _ := s.key.PublicKey.Bytes() // 0x04 || X || Y
	b, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": s.kid,
		"x": b64url(point[1:33]), "y": b64url(point[33:65]),
	}}})
	return b
}

// keyID names a public key by the hash of its encoding.
func keyID(pub *ecdsa.PublicKey) string {
	point, _ := pub.Bytes()
	sum := sha256.Sum256(point)
	return hex.EncodeToString(sum[:8])
}

// tokenGrants reports whether a bearer token's claims (read, not verified:
// the registry verifies) grant action on repository name.
func tokenGrants(authorization, name, action string) bool {
	scheme, token, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var claims struct {
		Access []tokenAccess `json:"access"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return false
	}
	for _, a := range claims.Access {
		if a.Type == "repository" && a.Name == name {
			for _, act := range a.Actions {
				if act == action || act == "*" {
					return true
				}
			}
		}
	}
	return false
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// writeRegistryError answers with a Distribution-style error document.
func writeRegistryError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{"code": code, "message": message, "detail": nil}}})
}
