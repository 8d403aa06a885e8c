package protocol

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"

	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/oci-tofu/oci-tofu/oci"
)

// httpError is an error with the status and message a client should see.
type httpError struct {
	status int
	msg    string
	err    error
}

func (e *httpError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *httpError) Unwrap() error { return e.err }

func statusErr(status int, err error, format string, args ...any) error {
	return &httpError{status: status, msg: fmt.Sprintf(format, args...), err: err}
}

// notFound reports a missing provider, version or platform (404).
func notFound(format string, args ...any) error {
	return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf(format, args...)}
}

// upstreamKind names the class of an upstream failure, for metrics.
func upstreamKind(err error) string {
	var resp *errcode.ErrorResponse
	var nerr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.Is(err, oci.ErrInvalidArtifact):
		return "invalid_artifact"
	case errors.As(err, &resp):
		return fmt.Sprintf("status_%d", resp.StatusCode)
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), isDialError(err):
		return "unreachable"
	default:
		return "other"
	}
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// upstreamError maps a failure talking to the registry (or reading an OCI
// layout) to what the client sees: never 200, never 404 (the caller maps
// the not-found cases it expects before calling this). The message names
// the class of failure; details stay in the server's log, since they may
// name internal hosts.
func upstreamError(err error, what string) error {
	var he *httpError
	if errors.As(err, &he) {
		return err
	}
	var resp *errcode.ErrorResponse
	switch kind := upstreamKind(err); {
	case kind == "timeout":
		return statusErr(http.StatusGatewayTimeout, err, "the OCI registry did not answer in time while %s", what)
	case kind == "invalid_artifact":
		return statusErr(http.StatusBadGateway, err, "the OCI registry holds an artifact OpenTofu would refuse (%s)", what)
	case kind == "unreachable":
		return statusErr(http.StatusBadGateway, err, "the OCI registry is unreachable while %s", what)
	case errors.As(err, &resp):
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return statusErr(http.StatusBadGateway, err, "the OCI registry denied the proxy access while %s (status %d): check the proxy's registry credentials", what, resp.StatusCode)
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			return statusErr(http.StatusServiceUnavailable, err, "the OCI registry is overloaded or unavailable while %s (status %d)", what, resp.StatusCode)
		case http.StatusNotFound:
			return statusErr(http.StatusBadGateway, err, "the OCI registry lacks content its own manifests reference while %s", what)
		default:
			return statusErr(http.StatusBadGateway, err, "the OCI registry answered status %d while %s", resp.StatusCode, what)
		}
	case oci.IsNotFound(err):
		return statusErr(http.StatusBadGateway, err, "the OCI registry lacks content its own manifests reference while %s", what)
	default:
		return statusErr(http.StatusBadGateway, err, "bad answer from the OCI registry while %s", what)
	}
}
