package oci

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A 429 with Retry-After pauses every request to the host, is retried a
// bounded number of times, and concurrency never exceeds the bound.
func TestPoliteTransportHonoursRetryAfterAndBounds(t *testing.T) {
	var inFlight, peak, calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		if calls.Add(1) <= 3 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	var events sync.Map
	pt := newPoliteTransport(http.DefaultTransport, &Etiquette{MaxConcurrent: 4, OnEvent: func(e Event) {
		v, _ := events.LoadOrStore(e.Kind, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}})
	client := &http.Client{Transport: pt}
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(srv.URL)
			if err != nil || resp.StatusCode != 200 {
				failed.Add(1)
			}
			if resp != nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Errorf("%d requests failed although each had retries left", failed.Load())
	}
	if peak.Load() > 4 {
		t.Errorf("%d requests in flight, bound 4", peak.Load())
	}
	if time.Since(start) < time.Second {
		t.Errorf("the throttle was not waited out (%s)", time.Since(start))
	}
	if calls.Load() != 23 {
		t.Errorf("%d requests reached the server, want 20 + 3 retries", calls.Load())
	}
	if v, _ := events.Load("throttled"); v == nil || v.(*atomic.Int64).Load() != 3 {
		t.Errorf("throttling not reported")
	}
}

// Retries stop at the bound, and a Retry-After beyond MaxWait is handed
// back at once instead of being waited out.
func TestPoliteTransportGivesUp(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path == "/long" {
			w.Header().Set("Retry-After", "120")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	// MaxWait is long so that "at once" below has room on a loaded
	// machine: a transport that waited would take MaxWait at least.
	const maxWait = 30 * time.Second
	client := &http.Client{Transport: newPoliteTransport(http.DefaultTransport, &Etiquette{MaxRetries: 2, MaxWait: maxWait})}
	resp, err := client.Get(srv.URL + "/down")
	if err != nil || resp.StatusCode != 503 || calls.Load() != 3 {
		t.Fatalf("503: %v %v after %d calls", resp, err, calls.Load())
	}
	resp.Body.Close()
	// A POST is never sent twice.
	calls.Store(0)
	resp, err = client.Post(srv.URL+"/down", "text/plain", http.NoBody)
	if err != nil || calls.Load() != 1 {
		t.Fatalf("POST retried: %d calls", calls.Load())
	}
	resp.Body.Close()
	// A request whose context ends stops waiting.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/down", nil)
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 503 {
			t.Fatalf("got %d", resp.StatusCode)
		}
	}
	// A Retry-After beyond MaxWait is handed back at once; until it ends,
	// requests to the host fail without being sent.
	calls.Store(0)
	start := time.Now()
	resp, err = client.Get(srv.URL + "/long")
	if err != nil || resp.StatusCode != 429 || calls.Load() != 1 || time.Since(start) > maxWait/2 {
		t.Fatalf("long Retry-After: %v %v after %d calls in %s", resp, err, calls.Load(), time.Since(start))
	}
	resp.Body.Close()
	_, err = client.Get(srv.URL + "/down")
	var te *ThrottledError
	if !errors.As(err, &te) || Classify(err) != FailureThrottled || calls.Load() != 1 {
		t.Fatalf("a request during a long pause: %v (%s) after %d calls", err, Classify(err), calls.Load())
	}
}

// A registry that throttles everything is asked about once per request:
// the retry budget, shared by the requests to the host, runs out after a
// few failures, however many requests are in flight.
func TestPoliteTransportRetryBudget(t *testing.T) {
	// mode 0: every answer is 503; 1: every answer is good; 2: the first
	// answer is 502, then good ones.
	var calls, mode, bad atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		switch mode.Load() {
		case 0:
			time.Sleep(20 * time.Millisecond)
			w.WriteHeader(http.StatusServiceUnavailable)
		case 2:
			if bad.Add(1) == 1 {
				w.WriteHeader(http.StatusBadGateway)
			}
		}
	}))
	defer srv.Close()
	client := &http.Client{Transport: newPoliteTransport(http.DefaultTransport, &Etiquette{MaxConcurrent: 64, MaxRetries: 2})}
	const requests = 64
	var wg sync.WaitGroup
	for i := 0; i < requests; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := client.Get(srv.URL); err == nil {
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	if n := calls.Load(); n > requests+retryTokens/2 {
		t.Errorf("%d calls for %d requests: the retry budget did not hold", n, requests)
	}
	// Good answers earn the budget back: a lone failure is retried again.
	mode.Store(1)
	for i := 0; i < 10*retryTokens; i++ {
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	mode.Store(2)
	resp, err := client.Get(srv.URL)
	if err != nil || resp.StatusCode != 200 || bad.Load() != 2 {
		t.Fatalf("after good answers: %v %v after %d calls", resp, err, bad.Load())
	}
	resp.Body.Close()
}

// A request whose deadline ends before the host's pause fails at once as
// throttled, instead of waiting until its deadline and looking like a
// timeout. The pause (8 s, within MaxWait) and the deadline (4 s) are
// long enough that "at once" (under half the deadline) holds on a loaded
// machine.
func TestPoliteTransportThrottledBeforeDeadline(t *testing.T) {
	const deadline = 4 * time.Second
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "8")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	client := &http.Client{Transport: newPoliteTransport(http.DefaultTransport, &Etiquette{})}
	get := func() (*http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		return client.Do(req)
	}
	resp, err := get()
	if err != nil || resp.StatusCode != 429 {
		t.Fatalf("first: %v %v", resp, err)
	}
	resp.Body.Close()
	start := time.Now()
	_, err = get()
	if Classify(err) != FailureThrottled || time.Since(start) > deadline/2 || calls.Load() != 1 {
		t.Fatalf("second: %v (%s) after %s and %d calls", err, Classify(err), time.Since(start), calls.Load())
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"3": 3 * time.Second, "0": 0, "-1": 0, "": 0, "soon": 0,
		now.Add(5 * time.Second).Format(http.TimeFormat): 5 * time.Second,
		now.Add(-time.Second).Format(http.TimeFormat):    0,
	} {
		if got := retryAfterHeader(v, now); got != want {
			t.Errorf("%q: %s, want %s", v, got, want)
		}
	}
}

// Credentials stay at the origin that asked for them: another port,
// another scheme or another host gets no Authorization header.
func TestRedirectPolicyKeepsCredentialsAtOrigin(t *testing.T) {
	first, _ := url.Parse("https://registry.example:5000/v2/a/blobs/sha256:x")
	for target, keep := range map[string]bool{
		"https://registry.example:5000/other": true,
		"https://registry.example:5001/blob":  false,
		"http://registry.example:5000/blob":   false,
		"https://storage.example:5000/blob":   false,
		"https://REGISTRY.example:5000/blob":  true,
	} {
		u, _ := url.Parse(target)
		req := &http.Request{URL: u, Header: http.Header{"Authorization": {"Basic secret"}, "Cookie": {"c"}}}
		if err := keepCredentialsAtOrigin(req, []*http.Request{{URL: first}}); err != nil {
			t.Fatal(err)
		}
		if got := req.Header.Get("Authorization") != ""; got != keep {
			t.Errorf("%s: Authorization kept = %v, want %v", target, got, keep)
		}
	}
	// Once a chain has left the origin, coming back does not restore it.
	away, _ := url.Parse("https://storage.example/x")
	back, _ := url.Parse("https://registry.example:5000/y")
	req := &http.Request{URL: back, Header: http.Header{"Authorization": {"Basic secret"}}}
	keepCredentialsAtOrigin(req, []*http.Request{{URL: first}, {URL: away}})
	if req.Header.Get("Authorization") != "" {
		t.Error("credentials restored after leaving the origin")
	}
}
