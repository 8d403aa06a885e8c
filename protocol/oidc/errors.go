package oidc

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The reasons a token is refused. Every error Verify returns is an *Error
// whose Reason is one of these, so errors.Is(err, ErrExpired) works.
var (
	// ErrTokenTooLarge: the bearer string is longer than
	// Options.MaxTokenBytes; it was not parsed.
	ErrTokenTooLarge = errors.New("token too large")
	// ErrMalformed: not a compact JWS with one signature, or its claims are
	// not a JSON object with a sub and an exp of the right types.
	ErrMalformed = errors.New("malformed token")
	// ErrUnsupportedAlgorithm: the token's alg is not one of Algorithms()
	// (HS*, none and everything else are refused before any key is used).
	ErrUnsupportedAlgorithm = errors.New("unsupported signature algorithm")
	// ErrUnknownIssuer: the token's iss is no configured issuer.
	ErrUnknownIssuer = errors.New("unknown issuer")
	// ErrUnknownKeyID: the issuer has no key with the token's kid, even
	// after the refresh Options.MinRefresh allowed (or did not allow).
	ErrUnknownKeyID = errors.New("unknown key id")
	// ErrBadSignature: no key of the issuer verifies the signature.
	ErrBadSignature = errors.New("bad signature")
	// ErrKeysUnavailable: the issuer's keys could not be fetched or read
	// (discovery, JWKS or JWKS file), so the token could not be checked.
	ErrKeysUnavailable = errors.New("issuer keys unavailable")
	// ErrExpired: exp is past, beyond Options.Leeway.
	ErrExpired = errors.New("token expired")
	// ErrNotYetValid: nbf or iat is in the future, beyond Options.Leeway.
	ErrNotYetValid = errors.New("token not yet valid")
	// ErrWrongAudience: aud does not hold the issuer's configured audience.
	ErrWrongAudience = errors.New("wrong audience")
)

// maxQuoted bounds the unverified strings (issuer, key id, audiences) an
// error message repeats.
const maxQuoted = 200

// Error is why Verify refused a token. Its message never holds the token;
// it may name the token's (possibly forged) iss, kid, alg and aud, which
// are not secret and are what a caller needs to fix its configuration.
type Error struct {
	// Reason is one of the Err* sentinels.
	Reason error
	// Issuer is the token's iss claim (unverified for ErrUnknownIssuer).
	Issuer string
	// KeyID is the token's kid (ErrUnknownKeyID, ErrBadSignature).
	KeyID string
	// Algorithm is the token's alg (ErrUnsupportedAlgorithm).
	Algorithm string
	// Audience is what the token's aud holds and ExpectedAudience what the
	// issuer is configured with (ErrWrongAudience).
	Audience         []string
	ExpectedAudience string
	// Time is exp (ErrExpired) or the nbf/iat in the future
	// (ErrNotYetValid); Now is this verifier's clock and Leeway the skew
	// allowed.
	Time   time.Time
	Now    time.Time
	Leeway time.Duration
	// Size and Limit are the token's length and the limit
	// (ErrTokenTooLarge).
	Size, Limit int
	// Err is the underlying cause, if any.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("oidc: ")
	switch e.Reason {
	case ErrTokenTooLarge:
		fmt.Fprintf(&b, "bearer token of %d bytes is longer than the %d accepted", e.Size, e.Limit)
	case ErrUnsupportedAlgorithm:
		fmt.Fprintf(&b, "token signed with algorithm %s; accepted: %s", quote(e.Algorithm), strings.Join(algorithmNames(), ", "))
	case ErrUnknownIssuer:
		fmt.Fprintf(&b, "token issuer %s is not a trusted issuer", quote(e.Issuer))
	case ErrUnknownKeyID:
		fmt.Fprintf(&b, "issuer %s has no key with id %s", e.Issuer, quote(e.KeyID))
	case ErrBadSignature:
		fmt.Fprintf(&b, "token signature does not verify with the keys of issuer %s", e.Issuer)
		if e.KeyID != "" {
			fmt.Fprintf(&b, " (key id %s)", quote(e.KeyID))
		}
	case ErrKeysUnavailable:
		fmt.Fprintf(&b, "keys of issuer %s unavailable", e.Issuer)
	case ErrExpired:
		fmt.Fprintf(&b, "token expired at %s (now %s, %s clock skew allowed)", stamp(e.Time), stamp(e.Now), e.Leeway)
	case ErrNotYetValid:
		fmt.Fprintf(&b, "token is valid only from %s, now is %s (%s clock skew allowed): check the clocks of the issuer and of this server",
			stamp(e.Time), stamp(e.Now), e.Leeway)
	case ErrWrongAudience:
		aud := make([]string, len(e.Audience))
		for i, a := range e.Audience {
			aud[i] = quote(a)
		}
		got := "none"
		if len(aud) > 0 {
			got = strings.Join(aud, ", ")
		}
		fmt.Fprintf(&b, "token audience is %s, but issuer %s is trusted for audience %s", got, e.Issuer, quote(e.ExpectedAudience))
	default:
		if e.Reason != nil {
			b.WriteString(e.Reason.Error())
		} else {
			b.WriteString("token refused")
		}
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap gives errors.Is the Reason and the cause.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

// quote quotes an untrusted string, shortened to maxQuoted bytes.
func quote(s string) string {
	if len(s) > maxQuoted {
		return fmt.Sprintf("%q…", s[:maxQuoted])
	}
	return fmt.Sprintf("%q", s)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
