package respond

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/deliver"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// httpError is an error with the status and message a client should see;
// err, which may name internal hosts, goes to the log only.
type httpError struct {
	status int
	msg    string
	err    error
	// retryAfter, when set, is sent as Retry-After (seconds).
	retryAfter int
}

func (e *httpError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *httpError) Unwrap() error { return e.err }

// Limited is the 429 of a request over a budget, sent with Retry-After
// (seconds); its audit event's outcome is limited.
func Limited(retryAfter int, format string, args ...any) error {
	return &httpError{status: http.StatusTooManyRequests, msg: fmt.Sprintf(format, args...), retryAfter: retryAfter}
}

func StatusErr(status int, err error, format string, args ...any) error {
	return &httpError{status: status, msg: fmt.Sprintf(format, args...), err: err}
}

// toHTTP maps an error to what the client sees, in one place: never 200,
// and never 404 for failures the source did not say mean "not found"
// (those it maps with source.Missing first). The message names the class of failure;
// details stay in the log.
func toHTTP(err error, retryAfter int) *httpError {
	if he := typedStatus(err); he != nil {
		return he
	}
	var pe *cache.PanicError
	if errors.As(err, &pe) {
		return &httpError{status: http.StatusInternalServerError, msg: "internal error", err: err}
	}
	var ptErr *pullthrough.Error
	if errors.As(err, &ptErr) {
		return pullThroughStatus(ptErr)
	}
	if errors.Is(err, errBadPath) {
		return &httpError{status: http.StatusBadRequest, msg: err.Error()}
	}
	var se *store.Error
	what := "serving the request"
	if errors.As(err, &se) {
		what = se.What
	}
	f := store.FailureOf(err)
	status, msg := upstreamStatus(f, what)
	var le *oci.LimitError
	if errors.As(err, &le) {
		msg = "the OCI repository is beyond the proxy's limits while " + what + ": " + le.Msg
	}
	out := &httpError{status: status, msg: msg, err: err}
	if status == http.StatusServiceUnavailable {
		out.retryAfter = retryAfter
	}
	return out
}

// pullThroughStatus is what a client sees of a pull-through failure: 404
// when the origin does not offer the release, 503 when too many are being
// pulled, 502 otherwise; Retry-After when the engine says when to ask
// again.
func pullThroughStatus(pe *pullthrough.Error) *httpError {
	status := http.StatusBadGateway
	switch pe.Failure {
	case pullthrough.FailureNotFound, pullthrough.FailurePushed:
		status = http.StatusNotFound
	case pullthrough.FailureBusy:
		status = http.StatusServiceUnavailable
	}
	return &httpError{status: status, msg: pe.Msg, err: pe.Err, retryAfter: pe.RetryAfter}
}

// upstreamStatus is the status and message for a class of upstream failure.
func upstreamStatus(f oci.Failure, what string) (int, string) {
	switch f {
	case oci.FailureTimeout:
		return http.StatusGatewayTimeout, "the OCI registry did not answer in time while " + what
	case oci.FailureThrottled, oci.FailureUnavailable:
		return http.StatusServiceUnavailable, "the OCI registry is overloaded or unavailable while " + what + "; try again shortly"
	case oci.FailureInvalid:
		return http.StatusBadGateway, "the OCI registry holds an artifact OpenTofu would refuse (" + what + ")"
	case oci.FailureCorrupt:
		return http.StatusBadGateway, "the OCI registry sent content that does not match its digest while " + what
	case oci.FailureNotFound:
		return http.StatusBadGateway, "the OCI registry lacks content its own manifests reference while " + what
	case oci.FailureUnauthorized, oci.FailureDenied:
		return http.StatusBadGateway, "the OCI registry denied the proxy access while " + what + ": check the proxy's registry credentials"
	case oci.FailureServerError:
		return http.StatusBadGateway, "the OCI registry answered with an error while " + what
	case oci.FailureUnreachable:
		return http.StatusBadGateway, "the OCI registry is unreachable while " + what
	case oci.FailureTLS:
		return http.StatusBadGateway, "the OCI registry's TLS certificate is not trusted while " + what + ": the proxy needs its CA"
	case oci.FailurePlainHTTP:
		return http.StatusBadGateway, "the OCI registry does not speak the expected protocol (HTTP vs HTTPS) while " + what
	case oci.FailureCanceled:
		return 499, "client closed the request"
	}
	return http.StatusBadGateway, "bad answer from the OCI registry while " + what
}

// Fail answers an error: its status and message, with details logged.
func (s *Responder) Fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		WriteError(w, r, 499, "client closed the request")
		return
	}
	var pe *cache.PanicError
	if errors.As(err, &pe) && pe.FirstReport() {
		s.Log.Error("panic in a background task of a request", "path", r.URL.EscapedPath(), "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
	he := toHTTP(err, retryAfter(err, s.Opts.FailureTTL))
	var denied *source.Denied
	switch {
	case errors.As(err, &denied):
		ev := EventOf(r.Context())
		ev.Refused(audit.OutcomeDenied, "", "", denied.Rule, denied.Msg)
		if s.Refused != nil && denied.Version != "" {
			s.Refused(denied, ev.Caller())
		}
	case he.status == http.StatusTooManyRequests:
		EventOf(r.Context()).Refused(audit.OutcomeLimited, "", "", "", he.msg)
	}
	if he.status >= 500 {
		s.Metrics.upstreamError(store.FailureOf(err).String())
		s.Observer.UpstreamFailure(store.FailureOf(err).String(), he.msg)
	}
	if he.err != nil {
		noteFailure(r, he.Error())
		if s.Opts.Hint != nil && he.status >= 500 {
			Hint(r, s.Opts.Hint(he.err))
		}
	}
	if he.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(he.retryAfter))
	}
	WriteError(w, r, he.status, he.msg)
}

// retryAfter is the Retry-After (seconds) of a 503: when the registry
// asked for a pause, what is left of it; otherwise until the failure is
// forgotten (FailureTTL) and the registry is asked again.
func retryAfter(err error, failureTTL time.Duration) int {
	secs := int(max(failureTTL, 0).Seconds()) + 1
	var te *oci.ThrottledError
	if errors.As(err, &te) {
		secs = max(secs, int(math.Ceil(time.Until(te.Until).Seconds())))
	}
	return secs
}

// typedStatus is the answer the outermost typed error in err's chain
// names (one the proxy built, or a source's), or nil.
func typedStatus(err error) *httpError {
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch te := e.(type) {
		case *httpError:
			return te
		case *deliver.Error:
			return &httpError{status: te.Status, msg: te.Msg, err: te.Err}
		case *source.NotFound:
			return &httpError{status: http.StatusNotFound, msg: te.Msg, err: te.Err}
		case *source.Denied:
			return &httpError{status: http.StatusNotFound, msg: te.Msg, err: te.Err}
		case *source.Unservable:
			return &httpError{status: http.StatusBadGateway, msg: te.Msg, err: te.Err}
		case *source.Conflict:
			return &httpError{status: http.StatusConflict, msg: te.Msg}
		case *source.Busy:
			return &httpError{status: http.StatusServiceUnavailable, msg: te.Msg}
		}
	}
	return nil
}
