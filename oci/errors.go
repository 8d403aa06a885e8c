package oci

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"syscall"

	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// ErrInvalidArtifact marks content that OpenTofu would refuse.
var ErrInvalidArtifact = errors.New("invalid artifact")

func Invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArtifact, fmt.Sprintf(format, args...))
}

// LimitError is content beyond one of oci-tofu's limits (limits.go): not
// something OpenTofu would refuse, but more than oci-tofu reads. Its
// message names the limit and holds no URL, so it may be shown to
// clients. It is an ErrInvalidArtifact (classified FailureInvalid).
type LimitError struct{ Msg string }

func (e *LimitError) Error() string { return "beyond oci-tofu's limits: " + e.Msg }

// Is makes a LimitError an ErrInvalidArtifact for errors.Is.
func (e *LimitError) Is(target error) bool { return target == ErrInvalidArtifact }

// Beyond is a LimitError with a formatted message.
func Beyond(format string, args ...any) error {
	return &LimitError{Msg: fmt.Sprintf(format, args...)}
}

// Failure classifies what went wrong in a registry or OCI-layout
// operation, so that callers decide (status codes, retries, hints,
// findings) without looking at oras-go's error types themselves.
type Failure int

// The classes of failure, from the most to the least specific.
const (
	FailureNone Failure = iota
	// FailureNotFound: a repository, tag, manifest or blob is missing.
	FailureNotFound
	// FailureUnauthorized: the registry wants credentials, or refused them (401).
	FailureUnauthorized
	// FailureDenied: the credentials may not do this (403).
	FailureDenied
	// FailureThrottled: the registry asked us to slow down (429).
	FailureThrottled
	// FailureUnavailable: the registry answered 503 (overloaded, down for
	// maintenance): worth asking again later.
	FailureUnavailable
	// FailureServerError: the registry answered another 5xx.
	FailureServerError
	// FailureTimeout: no answer in time.
	FailureTimeout
	// FailureUnreachable: no connection (refused, reset, DNS).
	FailureUnreachable
	// FailureTLS: the registry's certificate is not trusted or TLS failed.
	FailureTLS
	// FailurePlainHTTP: the registry speaks plain HTTP where HTTPS was
	// expected, or the other way round.
	FailurePlainHTTP
	// FailureInvalid: the content is not what OpenTofu accepts.
	FailureInvalid
	// FailureCorrupt: a blob or manifest does not match its digest or size.
	FailureCorrupt
	// FailureCanceled: the caller gave up.
	FailureCanceled
	// FailureOther: anything else the registry answered or did.
	FailureOther
)

var failureNames = map[Failure]string{
	FailureNone: "none", FailureNotFound: "not_found", FailureUnauthorized: "unauthorized",
	FailureDenied: "denied", FailureThrottled: "throttled", FailureUnavailable: "unavailable",
	FailureServerError: "server_error", FailureTimeout: "timeout", FailureUnreachable: "unreachable", FailureTLS: "tls",
	FailurePlainHTTP: "plain_http", FailureInvalid: "invalid_artifact", FailureCorrupt: "corrupt",
	FailureCanceled: "canceled", FailureOther: "other",
}

// String is the class's metric label.
func (f Failure) String() string { return failureNames[f] }

// Classify tells what kind of failure err is.
func Classify(err error) Failure {
	if err == nil {
		return FailureNone
	}
	if f, ok := classifyContent(err); ok {
		return f
	}
	if code := StatusCode(err); code != 0 {
		return classifyStatus(code)
	}
	return classifyTransport(err)
}

func classifyContent(err error) (Failure, bool) {
	var throttled *ThrottledError
	switch {
	case errors.As(err, &throttled):
		return FailureThrottled, true
	case errors.Is(err, ErrInvalidArtifact):
		return FailureInvalid, true
	case errors.Is(err, content.ErrMismatchedDigest), errors.Is(err, content.ErrTrailingData), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errdef.ErrSizeExceedsLimit):
		return FailureCorrupt, true
	case errors.Is(err, errdef.ErrNotFound):
		return FailureNotFound, true
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return FailureUnauthorized, true
	case errors.Is(err, context.Canceled):
		return FailureCanceled, true
	}
	return 0, false
}

func classifyStatus(code int) Failure {
	switch {
	case code == http.StatusNotFound:
		return FailureNotFound
	case code == http.StatusUnauthorized:
		return FailureUnauthorized
	case code == http.StatusForbidden:
		return FailureDenied
	case code == http.StatusTooManyRequests:
		return FailureThrottled
	case code == http.StatusRequestTimeout || code == http.StatusGatewayTimeout:
		return FailureTimeout
	case code == http.StatusServiceUnavailable:
		return FailureUnavailable
	case code >= 500:
		return FailureServerError
	}
	return FailureOther
}

func classifyTransport(err error) Failure {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var certInvalid x509.CertificateInvalidError
	var recordHeader tls.RecordHeaderError
	var nerr net.Error
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &certInvalid):
		return FailureTLS
	case errors.As(err, &recordHeader), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return FailurePlainHTTP
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return FailureTimeout
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), isDialError(err):
		return FailureUnreachable
	}
	return FailureOther
}

func isDialError(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) && op.Op == "dial" || errors.As(err, &dns)
}

// StatusCode is the HTTP status of a registry's error answer in err, or 0.
func StatusCode(err error) int {
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		return resp.StatusCode
	}
	return 0
}

// ErrorCodes are the OCI error codes ("NAME_UNKNOWN", "DENIED", …) of a
// registry's error answer in err.
func ErrorCodes(err error) []string {
	var resp *errcode.ErrorResponse
	if !errors.As(err, &resp) {
		return nil
	}
	out := make([]string, len(resp.Errors))
	for i, e := range resp.Errors {
		out[i] = e.Code
	}
	return out
}

// IsNotFound reports whether err means a repository, tag or blob is missing.
func IsNotFound(err error) bool { return Classify(err) == FailureNotFound }

// IsContentProblem reports whether err is about the artifact itself
// (invalid, missing or corrupt content) rather than about reaching the
// registry: a finding for the linter, not a reason to stop.
func IsContentProblem(err error) bool {
	switch Classify(err) {
	case FailureInvalid, FailureCorrupt, FailureNotFound:
		return true
	}
	return false
}

// ErrorURL is the URL a registry's error answer in err came from, or nil.
func ErrorURL(err error) *url.URL {
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) {
		return resp.URL
	}
	return nil
}

// GoRecovered runs fn in g; a panic in it (a bug some input met) becomes
// the group's error instead of ending the process: goroutines oci starts
// are outside the callers' recovery boundaries.
func GoRecovered(g *errgroup.Group, fn func() error) {
	g.Go(func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("internal error (a bug; please report it): panic: %v\n%s", p, debug.Stack())
			}
		}()
		return fn()
	})
}
