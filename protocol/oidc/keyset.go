package oidc

import (
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
)

// keySet is one issuer's keys, an oidc.KeySet. go-oidc's RemoteKeySet
// fetches the JWKS again for every token with an unknown kid (only
// concurrent fetches are shared), reads bodies without bound and cannot
// read a file; this one refreshes at most once per Options.MinRefresh,
// shares the fetch in flight, bounds every read and checks the jwks_uri.
type keySet struct {
	v      *Verifier
	issuer string
	file   string // JWKS file, or "" to use discovery

	mu        sync.Mutex
	keys      []jose.JSONWebKey
	fetched   time.Time // keys last fetched successfully
	attempted time.Time // last fetch started
	lastErr   error     // of the last fetch
	inflight  *refresh

	// jwksURL is the discovered jwks_uri; only the refresh in flight
	// touches it.
	jwksURL string
}

var _ gooidc.KeySet = (*keySet)(nil)

// refresh is a fetch in flight, shared by its callers.
type refresh struct {
	done chan struct{}
	err  error
}

// errThrottled: the last fetch started less than MinRefresh ago.
var errThrottled = errors.New("keys fetched less than the minimum refresh interval ago")

// VerifySignature implements oidc.KeySet. go-oidc has checked the
// algorithm; the typed error is handed to Verify through ctx.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	payload, err := k.verify(ctx, raw)
	if err != nil {
		if slot, ok := ctx.Value(errSlotKey{}).(*errSlot); ok {
			slot.err = err
		}
		return nil, err
	}
	return payload, nil
}

func (k *keySet) verify(ctx context.Context, raw string) ([]byte, *Error) {
	jws, err := jose.ParseSignedCompact(raw, algorithms)
	if err != nil {
		return nil, &Error{Reason: ErrMalformed, Issuer: k.issuer, Err: err}
	}
	if len(jws.Signatures) != 1 {
		return nil, &Error{Reason: ErrMalformed, Issuer: k.issuer, Err: errors.New("not exactly one signature")}
	}
	h := jws.Signatures[0].Header
	kid, alg := h.KeyID, h.Algorithm

	keys, _, stale := k.lookup(kid)
	if len(keys) == 0 || stale {
		err := k.refresh(ctx)
		var have bool
		keys, have, _ = k.lookup(kid)
		if len(keys) == 0 {
			if !have {
				cause := err
				if cause == nil || errors.Is(cause, errThrottled) {
					cause = k.lastError()
				}
				return nil, &Error{Reason: ErrKeysUnavailable, Issuer: k.issuer, Err: cause}
			}
			e := &Error{Reason: ErrUnknownKeyID, Issuer: k.issuer, KeyID: kid}
			if err != nil && !errors.Is(err, errThrottled) {
				e.Err = err
			}
			return nil, e
		}
	}
	for i := range keys {
		if keys[i].Algorithm != "" && keys[i].Algorithm != alg {
			continue
		}
		k.v.sigChecks.Add(1)
		if payload, err := jws.Verify(&keys[i]); err == nil {
			return payload, nil
		}
	}
	return nil, &Error{Reason: ErrBadSignature, Issuer: k.issuer, KeyID: kid}
}

// lookup returns the keys with id kid (all keys when kid is empty),
// whether there are keys at all, and whether they are due for a refresh.
func (k *keySet) lookup(kid string) (match []jose.JSONWebKey, have, stale bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, key := range k.keys {
		if kid == "" || key.KeyID == kid {
			match = append(match, key)
		}
	}
	have = len(k.keys) > 0
	stale = have && k.v.now().Sub(k.fetched) >= k.v.keyAge
	return match, have, stale
}

func (k *keySet) lastError() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lastErr
}

// refresh fetches the keys unless a fetch started less than MinRefresh
// ago (errThrottled); callers arriving during a fetch wait for it.
func (k *keySet) refresh(ctx context.Context) error {
	k.mu.Lock()
	r := k.inflight
	if r == nil {
		now := k.v.now()
		if !k.attempted.IsZero() && now.Sub(k.attempted) < k.v.minRefr {
			k.mu.Unlock()
			return errThrottled
		}
		k.attempted = now
		r = &refresh{done: make(chan struct{})}
		k.inflight = r
		// The fetch outlives a caller that gives up: others may wait on it.
		go k.run(r)
	}
	k.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (k *keySet) run(r *refresh) {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	keys, err := k.load(ctx)
	k.mu.Lock()
	if err == nil {
		k.keys, k.fetched = keys, k.v.now()
	}
	k.lastErr = err
	k.inflight = nil
	r.err = err
	k.mu.Unlock()
	close(r.done)
	if err != nil {
		k.v.log.Warn("oidc: fetching issuer keys failed", "issuer", k.issuer, "err", err)
	} else {
		k.v.log.Info("oidc: issuer keys fetched", "issuer", k.issuer, "keys", len(keys))
	}
}

// load reads the JWKS file, or discovers the jwks_uri (once) and fetches
// it.
func (k *keySet) load(ctx context.Context) ([]jose.JSONWebKey, error) {
	k.v.keyFetches.Add(1)
	if k.file != "" {
		return k.readFile(ctx)
	}
	if k.jwksURL == "" {
		u, err := k.discover(ctx)
		if err != nil {
			return nil, err
		}
		k.jwksURL = u
	}
	b, err := k.v.get(ctx, k.jwksURL)
	if err != nil {
		k.jwksURL = "" // discover again next time: it may have moved
		return nil, err
	}
	return k.parse(b, k.jwksURL)
}

func (k *keySet) readFile(ctx context.Context) ([]jose.JSONWebKey, error) {
	b, err := localfile.ReadBoundedContext(ctx, k.file, MaxDocumentBytes)
	if err != nil {
		return nil, fmt.Errorf("JWKS file: %w", err)
	}
	return k.parse(b, k.file)
}

// discover reads the issuer's discovery document and returns its
// jwks_uri, which must be https on the issuer's host.
func (k *keySet) discover(ctx context.Context) (string, error) {
	wellKnown := strings.TrimSuffix(k.issuer, "/") + "/.well-known/openid-configuration"
	k.v.discoveries.Add(1)
	b, err := k.v.get(ctx, wellKnown)
	if err != nil {
		return "", err
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return "", fmt.Errorf("discovery document %s is not JSON: %w", wellKnown, err)
	}
	if doc.Issuer != k.issuer {
		return "", fmt.Errorf("discovery document %s names issuer %s, not %s", wellKnown, quote(doc.Issuer), k.issuer)
	}
	iu, _ := url.Parse(k.issuer) // checked by New
	u, err := url.Parse(doc.JWKSURI)
	if err != nil || u.Scheme != "https" || u.User != nil || !sameHost(u, iu) {
		return "", fmt.Errorf("discovery document %s: refusing jwks_uri %s: not an https URL on the issuer's host %s",
			wellKnown, quote(doc.JWKSURI), iu.Host)
	}
	return u.String(), nil
}

func sameHost(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		return "443"
	}
	return a.Hostname() != "" && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

// parse keeps the RSA and EC signing keys of a JWKS (their public
// halves), at most MaxKeys; other keys are skipped.
func (k *keySet) parse(b []byte, from string) ([]jose.JSONWebKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("%s is not a JWKS: %w", from, err)
	}
	var keys []jose.JSONWebKey
	for i, raw := range set.Keys {
		var key jose.JSONWebKey
		if err := key.UnmarshalJSON(raw); err != nil {
			k.v.log.Debug("oidc: skipping a key", "issuer", k.issuer, "from", from, "index", i, "err", err)
			continue
		}
		if key.Use != "" && key.Use != "sig" {
			continue
		}
		pub := key.Public()
		switch pub.Key.(type) {
		case *rsa.PublicKey, *ecdsa.PublicKey:
		default:
			k.v.log.Debug("oidc: skipping a key that is not RSA or EC", "issuer", k.issuer, "from", from, "index", i)
			continue
		}
		if !pub.Valid() {
			continue
		}
		if len(keys) == MaxKeys {
			k.v.log.Warn("oidc: ignoring keys beyond the limit", "issuer", k.issuer, "from", from, "limit", MaxKeys)
			break
		}
		keys = append(keys, pub)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s holds no RSA or EC signing key", from)
	}
	return keys, nil
}

// get fetches u: 200 only, at most MaxDocumentBytes.
func (v *Verifier) get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if len(b) > MaxDocumentBytes {
		return nil, fmt.Errorf("GET %s: the response is larger than %d bytes", u, MaxDocumentBytes)
	}
	return b, nil
}
