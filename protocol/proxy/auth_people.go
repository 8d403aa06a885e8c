package proxy

import (
	"crypto/sha256"
	"net/http"
	"strings"

	"github.com/oci-tofu/oci-tofu/protocol/oidc"
)

// People sign in to the pages that are for them (the catalogue) from a
// browser, which cannot send a bearer token: with client authentication
// on, such a page also accepts HTTP Basic authentication (RFC 7617), the
// token as the password, any user name (with --registry-decides, the
// registry's user name and password, as the bearer token "user:password"
// carries them), and its 401 asks for it, so that the browser shows its
// sign-in dialog. The credential is then what the same bearer token would
// be: the same scope, budget and audit trail. Nothing else accepts Basic.

// basicRealm is the realm the catalogue's 401 names.
const basicRealm = `Basic realm="oci-tofu catalogue", charset="UTF-8"`

// AuthenticatePeople is Authenticate for a page for people: a Basic
// credential is read as the bearer token it stands for, and a refusal
// asks for one.
func (s *Server) AuthenticatePeople(h http.Handler) http.Handler {
	if !s.clientAuth {
		return h
	}
	signedIn := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Del("WWW-Authenticate")
		h.ServeHTTP(w, r)
	})
	bearer := s.Authenticate(signedIn)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("WWW-Authenticate", basicRealm)
		if user, password, ok := r.BasicAuth(); ok {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+s.tokenOfBasic(user, password))
		}
		bearer.ServeHTTP(w, r)
	})
}

// tokenOfBasic is the bearer token a Basic credential stands for: the
// password, unless the registry decides and the password is no token of
// the proxy's (then "user:password", the registry's credential).
func (s *Server) tokenOfBasic(user, password string) string {
	if !s.opts.RegistryDecides || user == "" || strings.ContainsRune(user, ':') {
		return password
	}
	sum := sha256.Sum256([]byte(password))
	if s.isOperatorSum(sum) || s.opts.Policy.Current().ClientOf(sum) != nil || oidc.LooksLikeJWT(password) {
		return password
	}
	return user + ":" + password
}
