package oidc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Defaults and bounds.
const (
	DefaultLeeway        = 60 * time.Second
	DefaultMaxTokenBytes = 8 << 10
	DefaultCacheEntries  = 10000
	DefaultCacheTTL      = 10 * time.Minute
	DefaultMinRefresh    = time.Minute
	DefaultKeyMaxAge     = time.Hour
	// MaxDocumentBytes bounds a discovery document, a JWKS body and a JWKS
	// file.
	MaxDocumentBytes = 1 << 20
	// MaxKeys bounds the keys kept of one JWKS; further keys are ignored.
	MaxKeys = 100
	// fetchTimeout bounds one refresh (discovery and JWKS together).
	fetchTimeout = 30 * time.Second
	// httpTimeout is the default client's timeout per request.
	httpTimeout = 15 * time.Second
)

// algorithms are the signature algorithms accepted.
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.PS256}

// Algorithms returns the signature algorithms accepted: RS256, RS384,
// RS512, ES256, ES384 and PS256.
func Algorithms() []string { return algorithmNames() }

func algorithmNames() []string {
	s := make([]string, len(algorithms))
	for i, a := range algorithms {
		s[i] = string(a)
	}
	return s
}

// Issuer is one OIDC issuer the operator trusts.
type Issuer struct {
	// URL is the iss claim, https://…, exactly as tokens carry it. Unless
	// JWKSFile is set, its keys are found through
	// URL/.well-known/openid-configuration.
	URL string
	// Audience is the aud the token must carry (required).
	Audience string
	// JWKSFile, if set, is a JWKS file the keys are read from instead of
	// fetched (offline issuers, e.g. a Kubernetes API server's
	// /openid/v1/jwks saved to a file). It is read again, as a fetch would
	// be, for an unknown key id.
	JWKSFile string
}

// Options tune a Verifier; the zero value is usable.
type Options struct {
	// HTTPClient fetches discovery documents and JWKS. Default: a client
	// with a 15s timeout. Its CheckRedirect is replaced: redirects are
	// followed only to https URLs on the issuer's host.
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Leeway is the clock skew allowed on exp, nbf and iat (default 60s).
	Leeway time.Duration
	// MaxTokenBytes: longer bearer strings are refused before any parsing
	// (default 8 KiB).
	MaxTokenBytes int
	// CacheEntries bounds the verified tokens remembered by their sha256
	// (default 10000); the oldest are forgotten first.
	CacheEntries int
	// CacheTTL bounds how long a verified token is remembered, whatever
	// its exp (default 10m).
	CacheTTL time.Duration
	// MinRefresh: an issuer's keys are fetched (or its JWKS file read) at
	// most once per MinRefresh for unknown key ids (default 1m). The first
	// fetch is not delayed.
	MinRefresh time.Duration
	// KeyMaxAge: keys older than this are fetched again on the next
	// verification, so a key the issuer withdrew stops verifying (default
	// 1h). The old keys stay in use when that fetch fails.
	KeyMaxAge time.Duration
	// Logger receives key fetches and their failures (default: discard).
	Logger *slog.Logger
}

// Identity is what a verified token says.
type Identity struct {
	Issuer  string
	Subject string
	Expiry  time.Time
	// Claims are all claims of the token, decoded with json.Number for
	// numbers (e.g. repository_owner, namespace_path, sub, and the nested
	// "kubernetes.io" object). Each Verify returns a fresh map.
	Claims map[string]any
}

// Stats count a Verifier's work since New.
type Stats struct {
	// SignatureChecks counts signature verifications (one per key tried).
	SignatureChecks uint64
	// CacheHits counts tokens answered from the cache.
	CacheHits uint64
	// DiscoveryFetches and KeyFetches count discovery documents and JWKS
	// requested (KeyFetches includes JWKS file reads after New).
	DiscoveryFetches uint64
	KeyFetches       uint64
}

// Verifier verifies tokens of the configured issuers. It is safe for
// concurrent use.
type Verifier struct {
	issuers  map[string]*issuer
	client   *http.Client
	now      func() time.Time
	leeway   time.Duration
	maxToken int
	cacheTTL time.Duration
	minRefr  time.Duration
	keyAge   time.Duration
	log      *slog.Logger
	cache    *tokenCache

	sigChecks, cacheHits, discoveries, keyFetches atomic.Uint64
}

type issuer struct {
	url      string
	audience string
	keys     *keySet
	verifier *gooidc.IDTokenVerifier
}

// New checks the issuers (https URLs without query or fragment, a
// non-empty audience, each URL once, a JWKS file that is readable and
// holds a usable key) and returns their Verifier. It contacts no issuer:
// keys are fetched on first use.
func New(issuers []Issuer, opts Options) (*Verifier, error) {
	if len(issuers) == 0 {
		return nil, errors.New("oidc: no issuer configured")
	}
	v := &Verifier{
		issuers:  make(map[string]*issuer, len(issuers)),
		now:      opts.Now,
		leeway:   opts.Leeway,
		maxToken: opts.MaxTokenBytes,
		cacheTTL: opts.CacheTTL,
		minRefr:  opts.MinRefresh,
		keyAge:   opts.KeyMaxAge,
		log:      opts.Logger,
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.leeway <= 0 {
		v.leeway = DefaultLeeway
	}
	if v.maxToken <= 0 {
		v.maxToken = DefaultMaxTokenBytes
	}
	if v.cacheTTL <= 0 {
		v.cacheTTL = DefaultCacheTTL
	}
	if v.minRefr <= 0 {
		v.minRefr = DefaultMinRefresh
	}
	if v.keyAge <= 0 {
		v.keyAge = DefaultKeyMaxAge
	}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	entries := opts.CacheEntries
	if entries <= 0 {
		entries = DefaultCacheEntries
	}
	v.cache = newTokenCache(entries)
	if opts.HTTPClient != nil {
		c := *opts.HTTPClient
		v.client = &c
	} else {
		v.client = &http.Client{Timeout: httpTimeout}
	}
	v.client.CheckRedirect = sameHostRedirect

	algs := algorithmNames()
	for i, is := range issuers {
		if err := checkIssuerURL(is.URL); err != nil {
			return nil, fmt.Errorf("oidc: issuer %d: %w", i+1, err)
		}
		if _, dup := v.issuers[is.URL]; dup {
			return nil, fmt.Errorf("oidc: issuer %s is configured twice", is.URL)
		}
		if strings.TrimSpace(is.Audience) == "" {
			return nil, fmt.Errorf("oidc: issuer %s: the audience is required", is.URL)
		}
		ks := &keySet{v: v, issuer: is.URL, file: is.JWKSFile}
		if is.JWKSFile != "" {
			ks.file = filepath.Clean(is.JWKSFile)
			keys, err := ks.readFile(context.Background())
			if err != nil {
				return nil, fmt.Errorf("oidc: issuer %s: %w", is.URL, err)
			}
			ks.keys, ks.fetched, ks.attempted = keys, v.now(), v.now()
		}
		v.issuers[is.URL] = &issuer{
			url:      is.URL,
			audience: is.Audience,
			keys:     ks,
			verifier: gooidc.NewVerifier(is.URL, ks, &gooidc.Config{
				SupportedSigningAlgs: algs,
				// The audience and the times are checked by Verify,
				// with leeway and typed errors.
				SkipClientIDCheck: true,
				SkipExpiryCheck:   true,
				Now:               v.now,
			}),
		}
	}
	return v, nil
}

func checkIssuerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("issuer URL %q: %w", s, err)
	}
	if u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return fmt.Errorf("issuer URL %q must be https://host[/path], without user, query or fragment", s)
	}
	return nil
}

// sameHostRedirect follows at most 3 redirects, to https on the same host.
func sameHostRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return errors.New("too many redirects")
	}
	if req.URL.Scheme != "https" || req.URL.Host != via[0].URL.Host {
		return fmt.Errorf("refusing redirect from %s to %s: another host or not https", via[0].URL.Host, req.URL.Redacted())
	}
	return nil
}

// Stats returns the counts since New.
func (v *Verifier) Stats() Stats {
	return Stats{
		SignatureChecks:  v.sigChecks.Load(),
		CacheHits:        v.cacheHits.Load(),
		DiscoveryFetches: v.discoveries.Load(),
		KeyFetches:       v.keyFetches.Load(),
	}
}

// LooksLikeJWT reports whether raw is shaped like a compact JWS: three
// base64url segments (the last, the signature, may be empty) whose first
// starts as a JSON object does ("eyJ"). It is cheap, so static bearer
// tokens need not go through Verify.
func LooksLikeJWT(raw string) bool {
	if !strings.HasPrefix(raw, "eyJ") {
		return false
	}
	dots, last := 0, -1
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '.':
			if i == last+1 && dots < 2 { // empty header or payload
				return false
			}
			dots++
			last = i
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return dots == 2
}

// errSlot carries the typed error of keySet.VerifySignature through
// go-oidc, which flattens its KeySet's errors to text.
type errSlot struct{ err *Error }

type errSlotKey struct{}

// Verify verifies raw, a compact JWS: the issuer is picked by its
// (unverified) iss, then the signature is checked against that issuer's
// keys, with an accepted algorithm, and then the audience, exp, nbf and
// iat. A token verified before and not yet expired is answered from the
// cache. Every error is an *Error.
func (v *Verifier) Verify(ctx context.Context, raw string) (Identity, error) {
	if len(raw) > v.maxToken {
		return Identity{}, &Error{Reason: ErrTokenTooLarge, Size: len(raw), Limit: v.maxToken}
	}
	if !LooksLikeJWT(raw) {
		return Identity{}, &Error{Reason: ErrMalformed, Err: errors.New("not a compact JWS: three base64url segments, the first a JSON object")}
	}
	sum := sha256.Sum256([]byte(raw))
	now := v.now()
	if e, ok := v.cache.get(sum, now); ok {
		v.cacheHits.Add(1)
		return e.identity()
	}

	jws, err := jose.ParseSignedCompact(raw, algorithms)
	if err != nil {
		var alg *jose.ErrUnexpectedSignatureAlgorithm
		if errors.As(err, &alg) {
			return Identity{}, &Error{Reason: ErrUnsupportedAlgorithm, Algorithm: string(alg.Got)}
		}
		return Identity{}, &Error{Reason: ErrMalformed, Err: err}
	}
	if len(jws.Signatures) != 1 {
		return Identity{}, &Error{Reason: ErrMalformed, Err: errors.New("not exactly one signature")}
	}
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &unverified); err != nil {
		return Identity{}, &Error{Reason: ErrMalformed, Err: errors.New("claims are not a JSON object with a string iss")}
	}
	is := v.issuers[unverified.Issuer]
	if is == nil {
		return Identity{}, &Error{Reason: ErrUnknownIssuer, Issuer: unverified.Issuer}
	}

	slot := &errSlot{}
	tok, err := is.verifier.Verify(context.WithValue(ctx, errSlotKey{}, slot), raw)
	if err != nil {
		if slot.err != nil {
			return Identity{}, slot.err
		}
		if ctx.Err() != nil {
			return Identity{}, &Error{Reason: ErrKeysUnavailable, Issuer: is.url, Err: ctx.Err()}
		}
		return Identity{}, &Error{Reason: ErrMalformed, Issuer: is.url, Err: err}
	}
	var std jwt.Claims
	if err := tok.Claims(&std); err != nil {
		return Identity{}, &Error{Reason: ErrMalformed, Issuer: is.url, Err: errors.New("registered claims of the wrong type")}
	}
	if err := v.checkClaims(is, &std, now); err != nil {
		return Identity{}, err
	}
	var payload json.RawMessage
	if err := tok.Claims(&payload); err != nil {
		return Identity{}, &Error{Reason: ErrMalformed, Issuer: is.url, Err: errors.New("claims are not JSON")}
	}
	e := &cacheEntry{issuer: is.url, subject: std.Subject, expiry: std.Expiry.Time(), payload: payload}
	id, err := e.identity()
	if err != nil {
		return Identity{}, err
	}
	until := e.expiry.Add(v.leeway)
	if limit := now.Add(v.cacheTTL); limit.Before(until) {
		until = limit
	}
	v.cache.put(sum, e, until)
	return id, nil
}

// checkClaims checks the audience, the times and that there is a subject.
func (v *Verifier) checkClaims(is *issuer, c *jwt.Claims, now time.Time) error {
	if !c.Audience.Contains(is.audience) {
		return &Error{Reason: ErrWrongAudience, Issuer: is.url, Audience: c.Audience, ExpectedAudience: is.audience}
	}
	if c.Expiry == nil {
		return &Error{Reason: ErrMalformed, Issuer: is.url, Err: errors.New("no exp claim")}
	}
	if exp := c.Expiry.Time(); !now.Before(exp.Add(v.leeway)) {
		return &Error{Reason: ErrExpired, Issuer: is.url, Time: exp, Now: now, Leeway: v.leeway}
	}
	for _, t := range []*jwt.NumericDate{c.NotBefore, c.IssuedAt} {
		if t != nil && now.Add(v.leeway).Before(t.Time()) {
			return &Error{Reason: ErrNotYetValid, Issuer: is.url, Time: t.Time(), Now: now, Leeway: v.leeway}
		}
	}
	if c.Subject == "" {
		return &Error{Reason: ErrMalformed, Issuer: is.url, Err: errors.New("no sub claim")}
	}
	return nil
}

func (e *cacheEntry) identity() (Identity, error) {
	d := json.NewDecoder(bytes.NewReader(e.payload))
	d.UseNumber()
	var claims map[string]any
	if err := d.Decode(&claims); err != nil {
		return Identity{}, &Error{Reason: ErrMalformed, Issuer: e.issuer, Err: errors.New("claims are not a JSON object")}
	}
	return Identity{Issuer: e.issuer, Subject: e.subject, Expiry: e.expiry, Claims: claims}, nil
}
