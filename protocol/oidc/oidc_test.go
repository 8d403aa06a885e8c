package oidc_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/oci-tofu/oci-tofu/protocol/oidc"
)

const audience = "https://oci-tofu.example"

// Keys are made once per test binary: RSA generation is slow under -race.
var (
	keysOnce                                   sync.Once
	rsaGitHub, rsaRotated, rsaK8s, rsaAttacker *rsa.PrivateKey
	ecGitLab, ec384                            *ecdsa.PrivateKey
)

func keys(t testing.TB) {
	t.Helper()
	keysOnce.Do(func() {
		gen := func() *rsa.PrivateKey {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			return k
		}
		rsaGitHub, rsaRotated, rsaK8s, rsaAttacker = gen(), gen(), gen(), gen()
		var err error
		if ecGitLab, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if ec384, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader); err != nil {
			panic(err)
		}
	})
}

// clock is a settable Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_800_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// jwk is the public JWK of key, as an issuer publishes it.
func jwk(key crypto.Signer, kid, alg string) jose.JSONWebKey {
	return jose.JSONWebKey{Key: key.Public(), KeyID: kid, Algorithm: alg, Use: "sig"}
}

// testIssuer is a local HTTPS issuer serving discovery and a JWKS,
// counting requests.
type testIssuer struct {
	*httptest.Server
	mu        sync.Mutex
	keys      []jose.JSONWebKey
	jwksURI   string // "" is this server's /keys
	docIssuer string // "" is this server's URL
	jwksBody  []byte // instead of keys, when set
	redirect  string // discovery redirects there, when set

	discoveries, jwksHits atomic.Int64
}

func newTestIssuer(t *testing.T, keys ...jose.JSONWebKey) *testIssuer {
	t.Helper()
	ti := &testIssuer{keys: keys}
	ti.Server = httptest.NewTLSServer(http.HandlerFunc(ti.serve))
	t.Cleanup(ti.Close)
	return ti
}

func (ti *testIssuer) serve(w http.ResponseWriter, r *http.Request) {
	self := "https://" + r.Host // not ti.URL: the race detector does not see through sockets
	ti.mu.Lock()
	uri, iss, body, redirect := ti.jwksURI, ti.docIssuer, ti.jwksBody, ti.redirect
	set := jose.JSONWebKeySet{Keys: append([]jose.JSONWebKey(nil), ti.keys...)}
	ti.mu.Unlock()
	switch r.URL.Path {
	case "/.well-known/openid-configuration":
		ti.discoveries.Add(1)
		if redirect != "" {
			http.Redirect(w, r, redirect, http.StatusFound)
			return
		}
		if uri == "" {
			uri = self + "/keys"
		}
		if iss == "" {
			iss = self
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                iss,
			"jwks_uri":                              uri,
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	case "/keys":
		ti.jwksHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if body != nil {
			_, _ = w.Write(body)
			return
		}
		_ = json.NewEncoder(w).Encode(set)
	default:
		http.NotFound(w, r)
	}
}

func (ti *testIssuer) setKeys(keys ...jose.JSONWebKey) {
	ti.set(func() { ti.keys = keys })
}

// set changes what ti serves.
func (ti *testIssuer) set(f func()) {
	ti.mu.Lock()
	defer ti.mu.Unlock()
	f()
}

// sign makes a compact JWS of claims with go-jose.
func sign(t testing.TB, key any, alg jose.SignatureAlgorithm, kid string, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

var jti atomic.Int64

// standard claims: iss, aud, sub, iat, nbf, exp 5 minutes from now, and a
// fresh jti so no two tokens are the same.
func claims(iss, sub string, now time.Time, extra map[string]any) map[string]any {
	c := map[string]any{
		"iss": iss, "aud": audience, "sub": sub,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": fmt.Sprint(jti.Add(1)),
	}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func githubClaims(iss string, now time.Time, extra map[string]any) map[string]any {
	c := claims(iss, "repo:acme/app:ref:refs/heads/main", now, map[string]any{
		"repository": "acme/app", "repository_owner": "acme", "repository_id": "123456789",
		"ref": "refs/heads/main", "workflow": "ci", "event_name": "push", "runner_environment": "github-hosted",
	})
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// setup is a Verifier trusting one test issuer that serves the GitHub key
// "gh-1" (RS256).
type setup struct {
	ti    *testIssuer
	clock *clock
	v     *oidc.Verifier
}

func newSetup(t *testing.T, opts oidc.Options) *setup {
	t.Helper()
	keys(t)
	s := &setup{ti: newTestIssuer(t, jwk(rsaGitHub, "gh-1", "RS256")), clock: newClock()}
	opts.HTTPClient = s.ti.Client()
	opts.Now = s.clock.Now
	v, err := oidc.New([]oidc.Issuer{{URL: s.ti.URL, Audience: audience}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	s.v = v
	return s
}

func (s *setup) token(t testing.TB, extra map[string]any) string {
	return sign(t, rsaGitHub, jose.RS256, "gh-1", githubClaims(s.ti.URL, s.clock.Now(), extra))
}

// noToken fails when err's message holds tok or any of its segments.
func noToken(t *testing.T, err error, tok string) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, tok) {
		t.Errorf("error message holds the token: %s", msg)
	}
	for _, seg := range strings.Split(tok, ".") {
		if len(seg) >= 16 && strings.Contains(msg, seg) {
			t.Errorf("error message holds a token segment: %s", msg)
		}
	}
}

func TestCIShapes(t *testing.T) {
	keys(t)
	clk := newClock()
	now := clk.Now()
	github := newTestIssuer(t, jwk(rsaGitHub, "gh-1", "RS256"))
	gitlab := newTestIssuer(t, jwk(ecGitLab, "gl-1", "ES256"))
	// Both test servers share httptest's certificate: one client trusts both.
	client := github.Client()

	const k8sIssuer = "https://kubernetes.default.svc.cluster.local"
	jwksFile := filepath.Join(t.TempDir(), "jwks.json")
	b, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk(rsaK8s, "k8s-1", "RS256")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jwksFile, b, 0o600); err != nil {
		t.Fatal(err)
	}

	v, err := oidc.New([]oidc.Issuer{
		{URL: github.URL, Audience: audience},
		{URL: gitlab.URL, Audience: audience},
		{URL: k8sIssuer, Audience: "oci-tofu", JWKSFile: jwksFile},
	}, oidc.Options{HTTPClient: client, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("GitHub Actions", func(t *testing.T) {
		tok := sign(t, rsaGitHub, jose.RS256, "gh-1", githubClaims(github.URL, now, nil))
		if !oidc.LooksLikeJWT(tok) {
			t.Fatal("LooksLikeJWT = false")
		}
		id, err := v.Verify(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		if id.Issuer != github.URL || id.Subject != "repo:acme/app:ref:refs/heads/main" || !id.Expiry.Equal(now.Add(5*time.Minute)) {
			t.Errorf("identity = %+v", id)
		}
		for k, want := range map[string]string{"repository": "acme/app", "repository_owner": "acme", "ref": "refs/heads/main"} {
			if got := id.Claims[k]; got != want {
				t.Errorf("claim %s = %v, want %s", k, got, want)
			}
		}
		if exp, ok := id.Claims["exp"].(json.Number); !ok || exp.String() != fmt.Sprint(now.Add(5*time.Minute).Unix()) {
			t.Errorf("exp claim = %#v, want a json.Number", id.Claims["exp"])
		}
	})

	t.Run("GitLab CI", func(t *testing.T) {
		tok := sign(t, ecGitLab, jose.ES256, "gl-1", claims(gitlab.URL, "project_path:acme/infra:ref_type:branch:ref:main", now, map[string]any{
			"namespace_path": "acme", "namespace_id": "42", "project_path": "acme/infra", "ref": "main", "ref_type": "branch",
			"aud": []string{audience, "https://other.example"},
		}))
		id, err := v.Verify(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		if id.Issuer != gitlab.URL || id.Subject != "project_path:acme/infra:ref_type:branch:ref:main" {
			t.Errorf("identity = %+v", id)
		}
		if id.Claims["namespace_path"] != "acme" || id.Claims["project_path"] != "acme/infra" {
			t.Errorf("claims = %v", id.Claims)
		}
	})

	t.Run("Kubernetes service account", func(t *testing.T) {
		tok := sign(t, rsaK8s, jose.RS256, "k8s-1", claims(k8sIssuer, "system:serviceaccount:ns:sa", now, map[string]any{
			"aud": []string{"oci-tofu"},
			"kubernetes.io": map[string]any{
				"namespace":      "ns",
				"serviceaccount": map[string]any{"name": "sa", "uid": "0b5c2e3e-0000-4000-8000-000000000001"},
				"pod":            map[string]any{"name": "runner-abc", "uid": "0b5c2e3e-0000-4000-8000-000000000002"},
			},
		}))
		id, err := v.Verify(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		if id.Issuer != k8sIssuer || id.Subject != "system:serviceaccount:ns:sa" {
			t.Errorf("identity = %+v", id)
		}
		k8s, ok := id.Claims["kubernetes.io"].(map[string]any)
		if !ok || k8s["namespace"] != "ns" {
			t.Fatalf("kubernetes.io claim = %#v", id.Claims["kubernetes.io"])
		}
		if sa, ok := k8s["serviceaccount"].(map[string]any); !ok || sa["name"] != "sa" {
			t.Errorf("kubernetes.io.serviceaccount = %#v", k8s["serviceaccount"])
		}
	})

	// Each HTTPS issuer was asked once; the file issuer never needed HTTP.
	for name, ti := range map[string]*testIssuer{"github": github, "gitlab": gitlab} {
		if d, k := ti.discoveries.Load(), ti.jwksHits.Load(); d != 1 || k != 1 {
			t.Errorf("%s: %d discovery and %d JWKS requests, want 1 and 1", name, d, k)
		}
	}
	if st := v.Stats(); st.DiscoveryFetches != 2 || st.KeyFetches != 2 {
		t.Errorf("stats = %+v, want 2 discovery and 2 key fetches", st)
	}
}

func TestAlgorithms(t *testing.T) {
	keys(t)
	clk := newClock()
	ti := newTestIssuer(t, jwk(rsaGitHub, "rsa", ""), jwk(ecGitLab, "p256", ""), jwk(ec384, "p384", ""))
	v, err := oidc.New([]oidc.Issuer{{URL: ti.URL, Audience: audience}}, oidc.Options{HTTPClient: ti.Client(), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		alg jose.SignatureAlgorithm
		key any
		kid string
	}{
		{jose.RS256, rsaGitHub, "rsa"}, {jose.RS384, rsaGitHub, "rsa"}, {jose.RS512, rsaGitHub, "rsa"},
		{jose.PS256, rsaGitHub, "rsa"}, {jose.ES256, ecGitLab, "p256"}, {jose.ES384, ec384, "p384"},
	} {
		tok := sign(t, tc.key, tc.alg, tc.kid, githubClaims(ti.URL, clk.Now(), nil))
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Errorf("%s: %v", tc.alg, err)
		}
	}
	// Not accepted, though go-jose could verify them.
	for _, tc := range []struct {
		alg jose.SignatureAlgorithm
		key any
	}{{jose.PS384, rsaGitHub}, {jose.PS512, rsaGitHub}, {jose.ES512, mustEC(t, elliptic.P521())}} {
		tok := sign(t, tc.key, tc.alg, "rsa", githubClaims(ti.URL, clk.Now(), nil))
		_, err := v.Verify(context.Background(), tok)
		if !errors.Is(err, oidc.ErrUnsupportedAlgorithm) {
			t.Errorf("%s: err = %v, want ErrUnsupportedAlgorithm", tc.alg, err)
		}
	}
}

func mustEC(t *testing.T, c elliptic.Curve) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func b64(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestRefused(t *testing.T) {
	s := newSetup(t, oidc.Options{})
	ctx := context.Background()
	now := s.clock.Now()
	// Fetch the keys first, so every case below meets a known key set.
	if _, err := s.v.Verify(ctx, s.token(t, nil)); err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&rsaGitHub.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})

	valid := s.token(t, nil)
	parts := strings.Split(valid, ".")
	tampered := parts[0] + "." + b64(githubClaims(s.ti.URL, now, map[string]any{"repository_owner": "evil"})) + "." + parts[2]

	for _, tc := range []struct {
		name   string
		tok    string
		reason error
		says   []string
	}{
		{"alg none", b64(map[string]string{"alg": "none", "typ": "JWT"}) + "." + b64(githubClaims(s.ti.URL, now, nil)) + ".",
			oidc.ErrUnsupportedAlgorithm, []string{`"none"`}},
		{"HS256 keyed with the RSA public key", sign(t, pubPEM, jose.HS256, "gh-1", githubClaims(s.ti.URL, now, nil)),
			oidc.ErrUnsupportedAlgorithm, []string{`"HS256"`}},
		{"expired", s.token(t, map[string]any{"iat": now.Add(-time.Hour).Unix(), "nbf": now.Add(-time.Hour).Unix(), "exp": now.Add(-2 * time.Minute).Unix()}),
			oidc.ErrExpired, []string{"expired at", "1m0s clock skew"}},
		{"nbf in the future", s.token(t, map[string]any{"nbf": now.Add(5 * time.Minute).Unix(), "exp": now.Add(10 * time.Minute).Unix()}),
			oidc.ErrNotYetValid, []string{"clocks"}},
		{"iat in the future", s.token(t, map[string]any{"iat": now.Add(5 * time.Minute).Unix(), "nbf": nil}),
			oidc.ErrNotYetValid, []string{"clocks"}},
		{"unknown issuer", sign(t, rsaGitHub, jose.RS256, "gh-1", githubClaims("https://token.actions.githubusercontent.com.evil.example", now, nil)),
			oidc.ErrUnknownIssuer, []string{`"https://token.actions.githubusercontent.com.evil.example"`}},
		{"issuer with a trailing slash", sign(t, rsaGitHub, jose.RS256, "gh-1", githubClaims(s.ti.URL+"/", now, nil)),
			oidc.ErrUnknownIssuer, nil},
		{"wrong audience", s.token(t, map[string]any{"aud": "sts.amazonaws.com"}),
			oidc.ErrWrongAudience, []string{`"sts.amazonaws.com"`, `"` + audience + `"`}},
		{"no audience", s.token(t, map[string]any{"aud": nil}), oidc.ErrWrongAudience, []string{"none"}},
		{"tampered payload", tampered, oidc.ErrBadSignature, []string{`"gh-1"`}},
		{"another key with the issuer's kid", sign(t, rsaAttacker, jose.RS256, "gh-1", githubClaims(s.ti.URL, now, nil)),
			oidc.ErrBadSignature, nil},
		{"PS256 where the JWK says RS256", sign(t, rsaGitHub, jose.PS256, "gh-1", githubClaims(s.ti.URL, now, nil)),
			oidc.ErrBadSignature, nil},
		{"no exp", s.token(t, map[string]any{"exp": nil}), oidc.ErrMalformed, []string{"exp"}},
		{"no sub", s.token(t, map[string]any{"sub": nil}), oidc.ErrMalformed, []string{"sub"}},
		{"exp a string", s.token(t, map[string]any{"exp": "tomorrow"}), oidc.ErrMalformed, nil},
		{"not JSON", "eyJhbGciOiJSUzI1NiJ9.bm90IGpzb24." + parts[2], oidc.ErrMalformed, nil},
		{"JSON serialization", `{"payload":"e30","signatures":[]}`, oidc.ErrMalformed, nil},
		{"four segments", valid + ".e30", oidc.ErrMalformed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.v.Verify(ctx, tc.tok)
			if !errors.Is(err, tc.reason) {
				t.Fatalf("err = %v, want %v", err, tc.reason)
			}
			var e *oidc.Error
			if !errors.As(err, &e) || e.Reason != tc.reason {
				t.Errorf("err = %#v, want an *oidc.Error with Reason %v", err, tc.reason)
			}
			for _, want := range tc.says {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q does not say %s", err, want)
				}
			}
			noToken(t, err, tc.tok)
		})
	}
	if st := s.v.Stats(); st.DiscoveryFetches != 1 || st.KeyFetches != 1 {
		t.Errorf("stats = %+v: refusals fetched keys", st)
	}
}

func TestLeeway(t *testing.T) {
	s := newSetup(t, oidc.Options{Leeway: 30 * time.Second})
	now := s.clock.Now()
	for name, extra := range map[string]map[string]any{
		"expired 20s ago":     {"exp": now.Add(-20 * time.Second).Unix(), "iat": now.Add(-time.Hour).Unix(), "nbf": nil},
		"valid in 20s":        {"nbf": now.Add(20 * time.Second).Unix()},
		"issued 20s from now": {"iat": now.Add(20 * time.Second).Unix(), "nbf": nil},
	} {
		if _, err := s.v.Verify(context.Background(), s.token(t, extra)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err := s.v.Verify(context.Background(), s.token(t, map[string]any{"exp": now.Add(-40 * time.Second).Unix(), "iat": now.Add(-time.Hour).Unix(), "nbf": nil}))
	var e *oidc.Error
	if !errors.As(err, &e) || e.Reason != oidc.ErrExpired || e.Leeway != 30*time.Second || !e.Now.Equal(now) {
		t.Errorf("err = %#v, want ErrExpired with 30s leeway", err)
	}
}

func TestTokenTooLarge(t *testing.T) {
	s := newSetup(t, oidc.Options{})
	huge := "eyJhbGciOiJSUzI1NiJ9." + strings.Repeat("A", 1<<20) + ".sig"
	// Refused on its size, unread: counted in bytes allocated (decoding
	// the token would take hundreds of KiB), not in time.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := s.v.Verify(context.Background(), huge)
	runtime.ReadMemStats(&after)
	var e *oidc.Error
	if !errors.As(err, &e) || e.Reason != oidc.ErrTokenTooLarge || e.Size != len(huge) || e.Limit != oidc.DefaultMaxTokenBytes {
		t.Fatalf("err = %v, want ErrTokenTooLarge", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Errorf("refusing allocated %d bytes: the token was read", n)
	}
	if len(err.Error()) > 200 {
		t.Errorf("message of %d bytes: %.200s", len(err.Error()), err)
	}
	if st := s.v.Stats(); st != (oidc.Stats{}) {
		t.Errorf("stats = %+v, want nothing done", st)
	}
	// One byte over the limit is refused too; at the limit it is parsed.
	small := newSetup(t, oidc.Options{MaxTokenBytes: 600})
	tok := small.token(t, nil)
	if len(tok) <= 600 {
		t.Fatalf("test token of %d bytes", len(tok))
	}
	if _, err := small.v.Verify(context.Background(), tok); !errors.Is(err, oidc.ErrTokenTooLarge) {
		t.Errorf("err = %v, want ErrTokenTooLarge", err)
	}
}

// floodTokens are n tokens of the issuer signed by the attacker, each with
// its own made-up kid.
func floodTokens(t *testing.T, s *setup, n int) []string {
	toks := make([]string, n)
	for i := range toks {
		toks[i] = sign(t, rsaAttacker, jose.RS256, fmt.Sprintf("made-up-%d", i), githubClaims(s.ti.URL, s.clock.Now(), nil))
	}
	return toks
}

func TestUnknownKeyIDFlood(t *testing.T) {
	s := newSetup(t, oidc.Options{})
	for i, tok := range floodTokens(t, s, 100) {
		_, err := s.v.Verify(context.Background(), tok)
		if !errors.Is(err, oidc.ErrUnknownKeyID) {
			t.Fatalf("token %d: err = %v, want ErrUnknownKeyID", i, err)
		}
		if i == 0 && !strings.Contains(err.Error(), `"made-up-0"`) {
			t.Errorf("message %q does not name the kid", err)
		}
	}
	if n := s.ti.jwksHits.Load(); n > 2 {
		t.Errorf("JWKS fetched %d times for 100 unknown kids, want at most 2", n)
	}
	if n := s.ti.discoveries.Load(); n != 1 {
		t.Errorf("discovery fetched %d times, want 1", n)
	}
	if st := s.v.Stats(); st.SignatureChecks != 0 {
		t.Errorf("%d signature checks for unknown kids", st.SignatureChecks)
	}
	// The issuer's own tokens still verify, without another fetch.
	if _, err := s.v.Verify(context.Background(), s.token(t, nil)); err != nil {
		t.Fatal(err)
	}
	if n := s.ti.jwksHits.Load(); n > 2 {
		t.Errorf("JWKS fetched %d times", n)
	}
}

func TestUnknownKeyIDFloodConcurrent(t *testing.T) {
	s := newSetup(t, oidc.Options{})
	toks := floodTokens(t, s, 100)
	var wg sync.WaitGroup
	errs := make([]error, len(toks))
	for i, tok := range toks {
		wg.Go(func() { _, errs[i] = s.v.Verify(context.Background(), tok) })
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, oidc.ErrUnknownKeyID) {
			t.Errorf("token %d: err = %v, want ErrUnknownKeyID", i, err)
		}
	}
	if n := s.ti.jwksHits.Load(); n > 2 {
		t.Errorf("JWKS fetched %d times for 100 concurrent unknown kids, want at most 2", n)
	}
}

func TestKeyRotation(t *testing.T) {
	s := newSetup(t, oidc.Options{MinRefresh: time.Minute})
	ctx := context.Background()
	if _, err := s.v.Verify(ctx, s.token(t, nil)); err != nil {
		t.Fatal(err)
	}
	// The issuer rotates: gh-2 replaces gh-1.
	s.ti.setKeys(jwk(rsaRotated, "gh-2", "RS256"))
	rotated := func() string {
		return sign(t, rsaRotated, jose.RS256, "gh-2", githubClaims(s.ti.URL, s.clock.Now(), nil))
	}
	// Within MinRefresh of the last fetch the new kid is not fetched yet.
	s.clock.Advance(30 * time.Second)
	if _, err := s.v.Verify(ctx, rotated()); !errors.Is(err, oidc.ErrUnknownKeyID) {
		t.Fatalf("err = %v, want ErrUnknownKeyID before MinRefresh", err)
	}
	if n := s.ti.jwksHits.Load(); n != 1 {
		t.Fatalf("JWKS fetched %d times, want 1", n)
	}
	s.clock.Advance(31 * time.Second)
	id, err := s.v.Verify(ctx, rotated())
	if err != nil {
		t.Fatalf("after MinRefresh: %v", err)
	}
	if id.Subject != "repo:acme/app:ref:refs/heads/main" {
		t.Errorf("identity = %+v", id)
	}
	if n := s.ti.jwksHits.Load(); n != 2 {
		t.Errorf("JWKS fetched %d times, want 2", n)
	}
	if n := s.ti.discoveries.Load(); n != 1 {
		t.Errorf("discovery fetched %d times, want 1 (the jwks_uri is kept)", n)
	}
	// The withdrawn key no longer verifies new tokens.
	if _, err := s.v.Verify(ctx, s.token(t, nil)); !errors.Is(err, oidc.ErrUnknownKeyID) {
		t.Errorf("withdrawn key: err = %v, want ErrUnknownKeyID", err)
	}
}

func TestKeyMaxAge(t *testing.T) {
	s := newSetup(t, oidc.Options{KeyMaxAge: 10 * time.Minute})
	ctx := context.Background()
	if _, err := s.v.Verify(ctx, s.token(t, nil)); err != nil {
		t.Fatal(err)
	}
	// The issuer withdraws gh-1 and adds gh-2; gh-1's kid is still known,
	// but once the keys are old they are fetched again.
	s.ti.setKeys(jwk(rsaRotated, "gh-2", "RS256"))
	s.clock.Advance(5 * time.Minute)
	if _, err := s.v.Verify(ctx, s.token(t, nil)); err != nil {
		t.Fatalf("keys 5 minutes old: %v", err)
	}
	s.clock.Advance(6 * time.Minute)
	if _, err := s.v.Verify(ctx, s.token(t, nil)); !errors.Is(err, oidc.ErrUnknownKeyID) {
		t.Fatalf("keys 11 minutes old: err = %v, want ErrUnknownKeyID", err)
	}
	if n := s.ti.jwksHits.Load(); n != 2 {
		t.Errorf("JWKS fetched %d times, want 2", n)
	}
	// When the issuer cannot be reached, old keys stay in use.
	s.ti.set(func() { s.ti.jwksBody = []byte("not json") })
	s.clock.Advance(11 * time.Minute)
	tok := sign(t, rsaRotated, jose.RS256, "gh-2", githubClaims(s.ti.URL, s.clock.Now(), nil))
	if _, err := s.v.Verify(ctx, tok); err != nil {
		t.Errorf("failed refresh: %v", err)
	}
}

func TestCache(t *testing.T) {
	s := newSetup(t, oidc.Options{})
	ctx := context.Background()
	tok := s.token(t, nil)
	for i := range 1000 {
		id, err := s.v.Verify(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		if id.Claims["repository_owner"] != "acme" {
			t.Fatalf("call %d: claims = %v", i, id.Claims)
		}
		id.Claims["repository_owner"] = "changed by a caller" // not seen by the next
	}
	if st := s.v.Stats(); st.SignatureChecks != 1 || st.CacheHits != 999 {
		t.Errorf("stats = %+v, want 1 signature check and 999 cache hits", st)
	}
	// Past exp (and the leeway) the cached token is refused as expired.
	s.clock.Advance(5*time.Minute + oidc.DefaultLeeway)
	if _, err := s.v.Verify(ctx, tok); !errors.Is(err, oidc.ErrExpired) {
		t.Errorf("err = %v, want ErrExpired", err)
	}
}

func TestCacheTTL(t *testing.T) {
	s := newSetup(t, oidc.Options{CacheTTL: time.Minute})
	ctx := context.Background()
	tok := s.token(t, map[string]any{"exp": s.clock.Now().Add(time.Hour).Unix()})
	verify := func(wantChecks uint64) {
		t.Helper()
		if _, err := s.v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if n := s.v.Stats().SignatureChecks; n != wantChecks {
			t.Errorf("%d signature checks, want %d", n, wantChecks)
		}
	}
	verify(1)
	s.clock.Advance(59 * time.Second)
	verify(1)
	s.clock.Advance(2 * time.Second)
	verify(2)
}

func TestCacheBound(t *testing.T) {
	s := newSetup(t, oidc.Options{CacheEntries: 2})
	ctx := context.Background()
	toks := []string{s.token(t, nil), s.token(t, nil), s.token(t, nil)}
	for _, tok := range toks {
		if _, err := s.v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	// toks[0] was forgotten for toks[2]; toks[2] is still remembered.
	for _, tok := range []string{toks[2], toks[0]} {
		if _, err := s.v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.v.Stats(); st.SignatureChecks != 4 || st.CacheHits != 1 {
		t.Errorf("stats = %+v, want 4 signature checks and 1 cache hit", st)
	}
}

func TestCacheConcurrent(t *testing.T) {
	s := newSetup(t, oidc.Options{CacheEntries: 8})
	ctx := context.Background()
	toks := make([]string, 16)
	for i := range toks {
		toks[i] = s.token(t, nil)
	}
	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range 200 {
				tok := toks[(w+i)%len(toks)]
				id, err := s.v.Verify(ctx, tok)
				if err != nil {
					t.Error(err)
					return
				}
				if id.Claims["repository"] != "acme/app" {
					t.Errorf("claims = %v", id.Claims)
					return
				}
			}
		})
	}
	wg.Wait()
	st := s.v.Stats()
	if st.SignatureChecks+st.CacheHits != workers*200 {
		t.Errorf("stats = %+v", st)
	}
	if s.ti.jwksHits.Load() != 1 {
		t.Errorf("JWKS fetched %d times", s.ti.jwksHits.Load())
	}
}

func TestSameTokenConcurrent(t *testing.T) {
	s := newSetup(t, oidc.Options{})
	tok := s.token(t, nil)
	var wg sync.WaitGroup
	const workers = 8
	for range workers {
		wg.Go(func() {
			for range 125 {
				if _, err := s.v.Verify(context.Background(), tok); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if st := s.v.Stats(); st.SignatureChecks > workers || st.SignatureChecks+st.CacheHits != 1000 {
		t.Errorf("stats = %+v, want at most %d signature checks", st, workers)
	}
}

// keysUnavailable verifies a fresh token of s and wants ErrKeysUnavailable
// saying say.
func keysUnavailable(t *testing.T, s *setup, say string) {
	t.Helper()
	tok := s.token(t, nil)
	_, err := s.v.Verify(context.Background(), tok)
	if !errors.Is(err, oidc.ErrKeysUnavailable) {
		t.Fatalf("err = %v, want ErrKeysUnavailable", err)
	}
	if !strings.Contains(err.Error(), say) {
		t.Errorf("message %q does not say %q", err, say)
	}
	noToken(t, err, tok)
}

func TestDiscoveryRefusals(t *testing.T) {
	t.Run("jwks_uri on another host", func(t *testing.T) {
		s := newSetup(t, oidc.Options{})
		s.ti.set(func() { s.ti.jwksURI = "https://keys.example/jwks" })
		keysUnavailable(t, s, `refusing jwks_uri "https://keys.example/jwks"`)
		if n := s.ti.jwksHits.Load(); n != 0 {
			t.Errorf("%d JWKS requests", n)
		}
		// The refusal is not retried before MinRefresh.
		keysUnavailable(t, s, "refusing jwks_uri")
		if n := s.ti.discoveries.Load(); n != 1 {
			t.Errorf("%d discovery requests, want 1", n)
		}
	})
	t.Run("jwks_uri over http", func(t *testing.T) {
		s := newSetup(t, oidc.Options{})
		s.ti.set(func() { s.ti.jwksURI = "http://" + strings.TrimPrefix(s.ti.URL, "https://") + "/keys" })
		keysUnavailable(t, s, "not an https URL on the issuer's host")
	})
	t.Run("another issuer in the document", func(t *testing.T) {
		s := newSetup(t, oidc.Options{})
		s.ti.set(func() { s.ti.docIssuer = "https://accounts.example" })
		keysUnavailable(t, s, `names issuer "https://accounts.example"`)
	})
	t.Run("JWKS larger than 1 MiB", func(t *testing.T) {
		s := newSetup(t, oidc.Options{})
		s.ti.set(func() {
			s.ti.jwksBody = []byte(`{"keys":[],"pad":"` + strings.Repeat("x", oidc.MaxDocumentBytes) + `"}`)
		})
		keysUnavailable(t, s, "larger than")
	})
	t.Run("JWKS without a usable key", func(t *testing.T) {
		s := newSetup(t, oidc.Options{})
		s.ti.set(func() {
			s.ti.jwksBody = []byte(`{"keys":[{"kty":"oct","kid":"gh-1","k":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"}]}`)
		})
		keysUnavailable(t, s, "no RSA or EC signing key")
	})
	t.Run("redirect to another host", func(t *testing.T) {
		s := newSetup(t, oidc.Options{})
		other := newTestIssuer(t)
		s.ti.set(func() { s.ti.redirect = other.URL + "/.well-known/openid-configuration" })
		keysUnavailable(t, s, "refusing redirect")
		if n := other.discoveries.Load(); n != 0 {
			t.Errorf("the other host was asked %d times", n)
		}
	})
	t.Run("recovers after MinRefresh", func(t *testing.T) {
		s := newSetup(t, oidc.Options{})
		s.ti.set(func() { s.ti.jwksURI = "https://keys.example/jwks" })
		keysUnavailable(t, s, "refusing")
		s.ti.set(func() { s.ti.jwksURI = "" })
		s.clock.Advance(oidc.DefaultMinRefresh)
		if _, err := s.v.Verify(context.Background(), s.token(t, nil)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestJWKSFileRereadForUnknownKid(t *testing.T) {
	keys(t)
	clk := newClock()
	const iss = "https://kubernetes.default.svc"
	file := filepath.Join(t.TempDir(), "jwks.json")
	write := func(keys ...jose.JSONWebKey) {
		b, err := json.Marshal(jose.JSONWebKeySet{Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(jwk(rsaK8s, "k8s-1", "RS256"))
	v, err := oidc.New([]oidc.Issuer{{URL: iss, Audience: "oci-tofu", JWKSFile: file}}, oidc.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	tok := func() string {
		return sign(t, rsaRotated, jose.RS256, "k8s-2", claims(iss, "system:serviceaccount:ns:sa", clk.Now(), map[string]any{"aud": "oci-tofu"}))
	}
	write(jwk(rsaK8s, "k8s-1", "RS256"), jwk(rsaRotated, "k8s-2", "RS256"))
	if _, err := v.Verify(context.Background(), tok()); !errors.Is(err, oidc.ErrUnknownKeyID) {
		t.Fatalf("err = %v, want ErrUnknownKeyID within MinRefresh of New", err)
	}
	clk.Advance(oidc.DefaultMinRefresh)
	if _, err := v.Verify(context.Background(), tok()); err != nil {
		t.Fatal(err)
	}
	if st := v.Stats(); st.KeyFetches != 1 || st.DiscoveryFetches != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestNewRefuses(t *testing.T) {
	dir := t.TempDir()
	oct := filepath.Join(dir, "oct.json")
	if err := os.WriteFile(oct, []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		issuers []oidc.Issuer
		says    string
	}{
		"none":           {nil, "no issuer"},
		"http":           {[]oidc.Issuer{{URL: "http://issuer.example", Audience: "a"}}, "must be https"},
		"no host":        {[]oidc.Issuer{{URL: "https:///path", Audience: "a"}}, "must be https"},
		"query":          {[]oidc.Issuer{{URL: "https://issuer.example/?a=b", Audience: "a"}}, "must be https"},
		"no audience":    {[]oidc.Issuer{{URL: "https://issuer.example", Audience: " "}}, "audience is required"},
		"twice":          {[]oidc.Issuer{{URL: "https://issuer.example", Audience: "a"}, {URL: "https://issuer.example", Audience: "b"}}, "twice"},
		"missing file":   {[]oidc.Issuer{{URL: "https://issuer.example", Audience: "a", JWKSFile: filepath.Join(dir, "absent.json")}}, "absent.json"},
		"a directory":    {[]oidc.Issuer{{URL: "https://issuer.example", Audience: "a", JWKSFile: dir}}, "not a regular file"},
		"no usable keys": {[]oidc.Issuer{{URL: "https://issuer.example", Audience: "a", JWKSFile: oct}}, "no RSA or EC signing key"},
	} {
		_, err := oidc.New(tc.issuers, oidc.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: err = %v, want one saying %q", name, err, tc.says)
		}
	}
}

func TestLooksLikeJWT(t *testing.T) {
	for raw, want := range map[string]bool{
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln": true,
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.":      true, // alg none: Verify says why
		"eyJhbGciOiJSUzI1NiJ9..c2ln":                false,
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0":      false,
		"eyJ.eyJ.c2ln.c2ln":                         false,
		"eyJhbGc=.eyJzdWIiOiJ4In0.c2ln":             false,
		"eyJ hbGc.eyJzdWIiOiJ4In0.c2ln":             false,
		"s3cr3t-static-token-0123456789":            false,
		"abc.def.ghi":                               false,
		`{"payload":"e30"}`:                         false,
		"":                                          false,
	} {
		if got := oidc.LooksLikeJWT(raw); got != want {
			t.Errorf("LooksLikeJWT(%q) = %v, want %v", raw, got, want)
		}
	}
}
