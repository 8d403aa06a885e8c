// Package oidc verifies the OIDC JSON Web Tokens CI jobs and workloads
// already hold (GitHub Actions' ACTIONS_ID_TOKEN, GitLab CI id_tokens, a
// Kubernetes projected service-account token), sent as bearer tokens, so
// clients of `oci-tofu serve` need no stored secret. It verifies; mapping
// an Identity's claims to a client is the caller's.
//
// A Verifier trusts the issuers it is given, each with the audience its
// tokens must carry. Verify picks the issuer by the token's (unverified)
// iss, then, through github.com/coreos/go-oidc and go-jose, checks the
// compact JWS: one signature, alg one of Algorithms() (RS256, RS384, RS512,
// ES256, ES384, PS256: no HS*, no none), made by a key of that issuer,
// matched by kid, and the kid's alg if its JWK names one. Then the
// audience, exp (required), nbf and iat, with Options.Leeway of clock
// skew, and a non-empty sub. Refusals are *Error, whose Reason (ErrExpired,
// ErrWrongAudience, ...) errors.Is finds; messages never hold the token.
//
// Keys come from a JWKS file, or from the jwks_uri of the issuer's
// discovery document (issuer/.well-known/openid-configuration), which must
// name the issuer and put the jwks_uri on https on the issuer's host:
// nothing else is contacted, and redirects must stay on that host.
//
// Bounds: bearer strings longer than Options.MaxTokenBytes (8 KiB) are
// refused before any parsing; discovery documents, JWKS and JWKS files are
// read up to MaxDocumentBytes (1 MiB), of which MaxKeys keys are kept, and
// requests time out. Keys are fetched when first needed and again for an
// unknown kid, at most once per issuer per Options.MinRefresh (1m; the
// first fetch is not delayed; concurrent callers share one fetch), so a
// flood of tokens with made-up kids costs no more fetches; and again once
// they are older than Options.KeyMaxAge (1h), so a withdrawn key stops
// verifying. A verified token is remembered by its sha256 until it expires
// or for Options.CacheTTL (10m), whichever is sooner, among at most
// Options.CacheEntries (10000) tokens, so a job's token costs one
// signature check, not one per request. A Verifier is safe for concurrent
// use.
package oidc
