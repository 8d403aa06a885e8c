package oci

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Etiquette bounds how hard oci-tofu leans on one registry: at most
// MaxConcurrent requests in flight per host, 429 and 503 answers honoured
// (every request to that host waits out the Retry-After, or fails at once
// with a ThrottledError when the wait would outlast MaxWait or the
// request's deadline), and a few retries with jittered backoff for
// idempotent requests that met a throttle, a 5xx or a dropped connection.
//
// Retries also draw on a budget per host (after gRPC's retry throttling):
// every failed answer spends a token, a retry that succeeds gives it back,
// any other good answer earns back a tenth and time one a second, and
// retries stop while fewer than half the tokens are left. A registry that
// throttles a request now and then is retried as often as it asks; one that
// refuses everything is asked about once per request, not MaxRetries+1
// times, however many requests are in flight.
type Etiquette struct {
	// MaxConcurrent bounds requests in flight per registry host (default 64).
	MaxConcurrent int
	// MaxRetries bounds the retries of one request (default 2; negative
	// disables retrying).
	MaxRetries int
	// MaxWait caps a single wait, whatever Retry-After asks (default 10s);
	// a longer Retry-After is reported to the caller instead of waited out.
	MaxWait time.Duration
	// OnEvent, when set, is told of throttling, retries and waits (for
	// metrics); it must be cheap and safe for concurrent use.
	OnEvent func(Event)
}

// Event is something the etiquette did on the way to a registry.
type Event struct {
	Host string
	// Kind is "throttled" (a 429 or 503 with Retry-After arrived),
	// "retry" (a request is sent again) or "wait" (a request waited for a
	// free slot or a throttle).
	Kind string
	Wait time.Duration
}

func (e *Etiquette) withDefaults() Etiquette {
	out := Etiquette{MaxConcurrent: 64, MaxRetries: 2, MaxWait: 10 * time.Second}
	if e != nil {
		if e.MaxConcurrent > 0 {
			out.MaxConcurrent = e.MaxConcurrent
		}
		if e.MaxRetries != 0 {
			out.MaxRetries = max(e.MaxRetries, 0)
		}
		if e.MaxWait > 0 {
			out.MaxWait = e.MaxWait
		}
		out.OnEvent = e.OnEvent
	}
	return out
}

// politeTransport applies an Etiquette to a base transport.
type politeTransport struct {
	base http.RoundTripper
	e    Etiquette

	mu    sync.Mutex
	hosts map[string]*hostState
}

type hostState struct {
	slots       chan struct{}
	mu          sync.Mutex
	pausedUntil time.Time
	tokens      float64   // the retry budget (see Etiquette)
	counted     time.Time // when tokens was last brought up to date
}

// The retry budget: retryTokens to start with and at most; a failed
// answer spends one, a retry that succeeds gives it back, another good
// answer earns retryRefill, and every second retryRefillPerSecond; retries
// need more than half.
const (
	retryTokens          = 20
	retryRefill          = 0.1
	retryRefillPerSecond = 1
)

// maxPause bounds how long one Retry-After keeps requests from a host.
const maxPause = time.Minute

// ThrottledError is a request refused without being sent: its registry
// asked for a pause (429 or 503 with Retry-After) that lasts until Until,
// beyond what the request may wait.
type ThrottledError struct {
	Host  string
	Until time.Time
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("%s asked for a pause until %s (Retry-After); the request was not sent", e.Host, e.Until.Format(time.RFC3339))
}

func newPoliteTransport(base http.RoundTripper, e *Etiquette) *politeTransport {
	return &politeTransport{base: base, e: e.withDefaults(), hosts: map[string]*hostState{}}
}

func (p *politeTransport) host(h string) *hostState {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.hosts[h]
	if s == nil {
		s = &hostState{slots: make(chan struct{}, p.e.MaxConcurrent), tokens: retryTokens}
		p.hosts[h] = s
	}
	return s
}

func (p *politeTransport) event(host, kind string, wait time.Duration) {
	if p.e.OnEvent != nil {
		p.e.OnEvent(Event{Host: host, Kind: kind, Wait: wait})
	}
}

// RoundTrip sends req within the host's bounds, retrying what may be
// retried.
func (p *politeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h := p.host(req.URL.Host)
	for attempt := 0; ; attempt++ {
		resp, err := p.send(req, h)
		failed := h.account(resp, err, attempt > 0)
		wait, retry := p.retryAfter(req, resp, failed, attempt)
		if retry && !h.mayRetry() {
			retry = false
		}
		if !retry {
			return resp, err
		}
		if resp != nil {
			drain(resp)
		}
		if err := sleepContext(req.Context(), wait); err != nil {
			return nil, err
		}
		p.event(req.URL.Host, "retry", wait)
		if req, err = rewind(req); err != nil {
			return nil, err
		}
	}
}

// send waits for a slot and for any throttle on the host, then sends.
func (p *politeTransport) send(req *http.Request, h *hostState) (*http.Response, error) {
	ctx := req.Context()
	start := time.Now()
	select {
	case h.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.slots }()
	if until := h.paused(); time.Until(until) > 0 {
		if !p.mayWait(ctx, until) {
			return nil, &ThrottledError{Host: req.URL.Host, Until: until}
		}
		if err := sleepContext(ctx, time.Until(until)); err != nil {
			return nil, err
		}
	}
	if waited := time.Since(start); waited > 10*time.Millisecond {
		p.event(req.URL.Host, "wait", waited)
	}
	resp, err := p.base.RoundTrip(req)
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		d := retryAfterHeader(resp.Header.Get("Retry-After"), time.Now())
		if d > 0 {
			h.pause(time.Now().Add(min(d, maxPause)))
		}
		p.event(req.URL.Host, "throttled", d)
	}
	return resp, err
}

// mayWait reports whether a request may wait for a pause to end: not
// beyond MaxWait, nor beyond its deadline.
func (p *politeTransport) mayWait(ctx context.Context, until time.Time) bool {
	if time.Until(until) > p.e.MaxWait {
		return false
	}
	dl, ok := ctx.Deadline()
	return !ok || until.Before(dl)
}

// account updates the host's retry budget with an answer (to a retry or
// not), and reports whether it failed (one that might be retried).
func (h *hostState) account(resp *http.Response, err error, retry bool) bool {
	failed := err != nil && transientError(err) || resp != nil && retryableStatus(resp.StatusCode)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refillLocked()
	switch {
	case failed:
		h.tokens = max(h.tokens-1, 0)
	case err == nil && retry:
		h.tokens = min(h.tokens+1, retryTokens)
	case err == nil:
		h.tokens = min(h.tokens+retryRefill, retryTokens)
	}
	return failed
}

// mayRetry reports whether the host's retry budget allows a retry.
func (h *hostState) mayRetry() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refillLocked()
	return h.tokens > retryTokens/2
}

func (h *hostState) refillLocked() {
	now := time.Now()
	if !h.counted.IsZero() {
		h.tokens = min(h.tokens+now.Sub(h.counted).Seconds()*retryRefillPerSecond, retryTokens)
	}
	h.counted = now
}

// retryableStatus: answers worth asking again, for an idempotent request.
// A 500 is among them: registries answer it for races of their own (two
// pushes writing one blob), gone on the next try.
func retryableStatus(code int) bool {
	switch code {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout, http.StatusRequestTimeout:
		return true
	}
	return false
}

func (h *hostState) paused() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pausedUntil
}

func (h *hostState) pause(until time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if until.After(h.pausedUntil) {
		h.pausedUntil = until
	}
}

// retryAfter decides whether and when to send req again, after an
// attempt that failed (as hostState.account judged it: a transient error
// or a retryable status).
func (p *politeTransport) retryAfter(req *http.Request, resp *http.Response, failed bool, attempt int) (time.Duration, bool) {
	if !failed || attempt >= p.e.MaxRetries || !replayable(req) || req.Context().Err() != nil {
		return 0, false
	}
	var wait time.Duration
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		wait = retryAfterHeader(resp.Header.Get("Retry-After"), time.Now())
	}
	if wait > p.e.MaxWait {
		return 0, false // the caller learns of the throttle now rather than much later
	}
	if wait == 0 {
		wait = backoff(attempt)
	}
	if dl, ok := req.Context().Deadline(); ok && time.Now().Add(wait).After(dl) {
		return 0, false
	}
	return wait, true
}

// backoff is exponential with full jitter: 100–200 ms, 200–400 ms, …
func backoff(attempt int) time.Duration {
	base := 100 * time.Millisecond << attempt
	return base + rand.N(base)
}

// retryAfterHeader reads Retry-After in seconds or as an HTTP date.
func retryAfterHeader(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, 3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), time.Hour)
	}
	return 0
}

// replayable reports whether a request can be sent twice: an idempotent
// method whose body (if any) can be produced again.
func replayable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		return false
	}
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

func rewind(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Body = body
	return r, nil
}

// transientError is a network failure worth one more try: a reset or
// refused connection, or a timeout before any answer.
func transientError(err error) bool {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	switch classifyTransport(err) {
	case FailureUnreachable, FailureTimeout:
		return true
	}
	return false
}

// drain reads a little of an answer we discard so its connection can be
// reused, then closes it.
func drain(resp *http.Response) {
	buf := make([]byte, 4096)
	resp.Body.Read(buf)
	resp.Body.Close()
}
