package oci

import (
	"context"
	"errors"
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
// (every request to that host waits out the Retry-After), and a few retries
// with jittered backoff for idempotent requests that met a throttle, a 5xx
// or a dropped connection.
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
}

func newPoliteTransport(base http.RoundTripper, e *Etiquette) *politeTransport {
	return &politeTransport{base: base, e: e.withDefaults(), hosts: map[string]*hostState{}}
}

func (p *politeTransport) host(h string) *hostState {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.hosts[h]
	if s == nil {
		s = &hostState{slots: make(chan struct{}, p.e.MaxConcurrent)}
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
		wait, retry := p.retryAfter(req, resp, err, attempt)
		if !retry {
			return resp, err
		}
		if resp != nil {
			drain(resp)
		}
		if err := p.sleep(req.Context(), wait); err != nil {
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
	if err := p.sleep(ctx, time.Until(h.paused())); err != nil {
		return nil, err
	}
	if waited := time.Since(start); waited > 10*time.Millisecond {
		p.event(req.URL.Host, "wait", waited)
	}
	resp, err := p.base.RoundTrip(req)
	if resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		d := retryAfterHeader(resp.Header.Get("Retry-After"), time.Now())
		if d > 0 {
			h.pause(time.Now().Add(min(d, p.e.MaxWait)))
		}
		p.event(req.URL.Host, "throttled", d)
	}
	return resp, err
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

// retryAfter decides whether and when to send req again.
func (p *politeTransport) retryAfter(req *http.Request, resp *http.Response, err error, attempt int) (time.Duration, bool) {
	if attempt >= p.e.MaxRetries || !replayable(req) || req.Context().Err() != nil {
		return 0, false
	}
	var wait time.Duration
	switch {
	case err != nil:
		if !transientError(err) {
			return 0, false
		}
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusServiceUnavailable:
		wait = retryAfterHeader(resp.Header.Get("Retry-After"), time.Now())
	case resp.StatusCode == http.StatusBadGateway, resp.StatusCode == http.StatusGatewayTimeout, resp.StatusCode == http.StatusRequestTimeout:
	default:
		return 0, false
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

func (p *politeTransport) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain reads a little of an answer we discard so its connection can be
// reused, then closes it.
func drain(resp *http.Response) {
	buf := make([]byte, 4096)
	resp.Body.Read(buf)
	resp.Body.Close()
}
