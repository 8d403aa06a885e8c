package proxy

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// urlSigner makes archive URLs unguessable and time-limited: clients send
// no credentials when downloading archives, so when client authentication
// is on, the metadata (which they fetch with credentials) hands out URLs
// carrying an HMAC of the path and an expiry time.
type urlSigner struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

func (u *urlSigner) mac(path string, expires int64) []byte {
	m := hmac.New(sha256.New, u.key)
	m.Write([]byte("oci-tofu archive v1\n"))
	m.Write([]byte(path))
	m.Write([]byte("\n"))
	m.Write([]byte(strconv.FormatInt(expires, 10)))
	return m.Sum(nil)
}

// sign returns the query string that authorises path until now+ttl.
func (u *urlSigner) sign(path string) string {
	expires := u.now().Add(u.ttl).Unix()
	q := url.Values{}
	q.Set("expires", strconv.FormatInt(expires, 10))
	q.Set("signature", base64.RawURLEncoding.EncodeToString(u.mac(path, expires)))
	return q.Encode()
}

// verify checks the signature and expiry of a request for path.
func (u *urlSigner) verify(path string, q url.Values) error {
	expires, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil {
		return statusErr(http.StatusForbidden, nil, "this archive URL is not signed: request it again through the mirror or registry metadata")
	}
	sig, err := base64.RawURLEncoding.DecodeString(q.Get("signature"))
	if err != nil || !hmac.Equal(sig, u.mac(path, expires)) {
		return statusErr(http.StatusForbidden, nil, "this archive URL's signature is invalid")
	}
	if u.now().Unix() > expires {
		return statusErr(http.StatusForbidden, nil, "this archive URL has expired: request it again through the mirror or registry metadata")
	}
	return nil
}
