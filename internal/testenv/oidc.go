package testenv

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is an OIDC issuer over HTTPS on 127.0.0.1, with the test CA's
// localhost certificate: a discovery document and a JWKS of one RSA key,
// as GitHub Actions', GitLab's or a cluster's issuer serves them. It
// signs the tokens a test hands its clients, and counts the requests for
// its keys. It stops when the test ends.
type Issuer struct {
	URL        string // https://localhost:PORT: the tokens' iss
	key        *rsa.PrivateKey
	keyID      string
	KeyFetches atomic.Int64 // JWKS requests served
}

// StartIssuer starts an Issuer.
func StartIssuer(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	is := &Issuer{key: key, keyID: "test-key-1", URL: fmt.Sprintf("https://localhost:%d", ln.Addr().(*net.TCPAddr).Port)}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "jwks_uri": is.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		is.KeyFetches.Add(1)
		json.NewEncoder(w).Encode(is.JWKS())
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{NewCA(t).ServerCert}, MinVersion: tls.VersionTLS12}}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return is
}

// JWKS is the issuer's public keys.
func (is *Issuer) JWKS() jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: is.keyID, Algorithm: "RS256", Use: "sig"}}}
}

// Token is a JWT the issuer signs (RS256) for audience, with subject
// sub, valid for ttl from now, carrying claims besides.
func (is *Issuer) Token(t testing.TB, audience, sub string, ttl time.Duration, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: is.key, KeyID: is.keyID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c := map[string]any{"iss": is.URL, "aud": audience, "sub": sub, "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(ttl).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	tok, err := jwt.Signed(signer).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
