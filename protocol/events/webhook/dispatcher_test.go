package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const source = "https://proxy.example.com"

// receiver is an endpoint checking every delivery's signature with the
// Standard Webhooks reference library against the secrets it knows.
type receiver struct {
	t       *testing.T
	srv     *httptest.Server
	hooks   []*standardwebhooks.Webhook
	respond func(n int, w http.ResponseWriter, r *http.Request) // nil: 204

	mu       sync.Mutex
	requests int
	got      []events.Event
	ids      []string
	stamps   []string
	bad      []string
}

func newReceiver(t *testing.T, secrets []string, respond func(int, http.ResponseWriter, *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{t: t, respond: respond}
	for _, s := range secrets {
		h, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		rc.hooks = append(rc.hooks, h)
	}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rc.mu.Lock()
	rc.requests++
	n := rc.requests
	rc.ids = append(rc.ids, r.Header.Get(HeaderID))
	rc.stamps = append(rc.stamps, r.Header.Get(HeaderTimestamp))
	var verr error
	for _, h := range rc.hooks {
		if verr = h.Verify(body, r.Header); verr == nil {
			break
		}
	}
	e, perr := events.Parse(body)
	switch {
	case r.Method != http.MethodPost || r.Header.Get("Content-Type") != ContentType:
		rc.bad = append(rc.bad, fmt.Sprintf("%s %s", r.Method, r.Header.Get("Content-Type")))
	case verr != nil:
		rc.bad = append(rc.bad, "signature: "+verr.Error())
	case perr != nil:
		rc.bad = append(rc.bad, "event: "+perr.Error())
	case e.ID != r.Header.Get(HeaderID):
		rc.bad = append(rc.bad, "webhook-id "+r.Header.Get(HeaderID)+" is not the event's "+e.ID)
	default:
		rc.got = append(rc.got, e)
	}
	rc.mu.Unlock()
	if rc.respond != nil {
		rc.respond(n, w, r)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// counts is the requests made, the events verified and the refused.
func (rc *receiver) counts() (requests, verified int, bad []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.requests, len(rc.got), append([]string(nil), rc.bad...)
}

// subscription is one to url signed with secrets.
func subscription(t *testing.T, name, rawURL string, timeout time.Duration, secrets ...string) Subscription {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := readSecrets(secrets, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	return Subscription{Name: name, URL: u, Timeout: timeout, secrets: keys}
}

// fast are options for tests: retries without long waits.
func fast(o Options) Options {
	if o.Backoff == 0 {
		o.Backoff = time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 5 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

func newDispatcher(t *testing.T, opts Options, subs ...Subscription) *Dispatcher {
	t.Helper()
	d := New(&Config{Subscriptions: subs}, fast(opts))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Close(ctx)
	})
	return d
}

// closeNow closes d, waiting at most 10 s for its queues to drain.
func closeNow(t *testing.T, d *Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func ingested(version string) events.Event {
	return events.New(source, events.VersionIngested{Kind: events.KindProvider, Address: "registry.example.com/acme/aws",
		Version: version, Via: events.ViaPush, Repository: "oci.example.com/acme/aws", Digest: "sha256:" + strings.Repeat("0", 64)})
}

// every is one event of each type.
func every() []events.Event {
	a := "registry.example.com/acme/aws"
	return []events.Event{
		ingested("1.0.0"),
		events.New(source, events.VersionPruned{Address: a, Version: "0.1.0", Repository: "oci.example.com/acme/aws", Digest: "sha256:" + strings.Repeat("1", 64)}),
		events.New(source, events.PolicyDecision{Denied: true, Address: a, Version: "1.0.0", Rule: "r", Reason: "no", Client: &events.Client{Name: "ci"}}),
		events.New(source, events.PolicyDecision{Address: a, Version: "1.0.0", Rule: "r", Reason: "careful"}),
		events.New(source, events.PolicyStanding{Address: a, Version: "1.0.0", Rule: "r", Reason: "old"}),
		events.New(source, events.PolicyStanding{Revoked: true, Address: a, Version: "1.0.0", Rule: "r", Reason: "bad"}),
		events.New(source, events.VulnerabilityDetected{Address: a, Version: "1.0.0", IDs: []string{"GO-2024-0001"}}),
		events.New(source, events.OriginKeysChanged{Address: a, OldKeyIDs: []string{"A"}, NewKeyIDs: []string{"B"}}),
		events.New(source, events.AuditLost{Count: 3}),
	}
}

// eventually waits up to 10 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestDeliversSignedEvents: each type reaches the receiver, its
// signature verified by the reference library, its body the event.
func TestDeliversSignedEvents(t *testing.T) {
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, nil)
	d := newDispatcher(t, Options{}, subscription(t, "all", rc.srv.URL+"/hook", time.Second, secret))
	sent := every()
	for _, e := range sent {
		d.Emit(context.Background(), e)
	}
	closeNow(t, d)
	requests, verified, bad := rc.counts()
	if requests != len(sent) || verified != len(sent) || len(bad) > 0 {
		t.Fatalf("%d requests, %d verified of %d; refused: %v", requests, verified, len(sent), bad)
	}
	for i, e := range rc.got {
		if e.ID != sent[i].ID || e.Type != sent[i].Type || e.Subject != sent[i].Subject {
			t.Errorf("event %d: got %s %s %s, sent %s %s %s", i, e.ID, e.Type, e.Subject, sent[i].ID, sent[i].Type, sent[i].Subject)
		}
	}
	if got := testutil.ToFloat64(d.metrics.deliveries.WithLabelValues("all", OutcomeDelivered)); got != float64(len(sent)) {
		t.Errorf("delivered counter %v", got)
	}
	recent := d.Recent()
	if len(recent) != len(sent) || recent[0].EventID != sent[len(sent)-1].ID || recent[0].Outcome != OutcomeDelivered ||
		recent[0].StatusCode != http.StatusNoContent || recent[0].Attempts != 1 || recent[0].Subscription != "all" {
		t.Errorf("recent: %+v", recent)
	}
}

// TestSignatureMatchesReference: our header is what the reference
// library signs, one v1 signature per key.
func TestSignatureMatchesReference(t *testing.T) {
	a, b := NewSecret(), NewSecret()
	keys, err := readSecrets([]string{a, b}, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Unix(1700000000, 0)
	body := []byte(`{"x":1}`)
	ours := Signature("msg_1", ts, body, keys)
	var want []string
	for _, s := range []string{a, b} {
		h, _ := standardwebhooks.NewWebhook(s)
		sig, _ := h.Sign("msg_1", ts, body)
		want = append(want, sig)
	}
	if ours != strings.Join(want, " ") {
		t.Errorf("ours %q\nreference %q", ours, strings.Join(want, " "))
	}
}

// TestRotation: signed with the old and the new secret, a delivery is
// verified by a receiver knowing either alone, and by none knowing
// neither.
func TestRotation(t *testing.T) {
	old, next, other := NewSecret(), NewSecret(), NewSecret()
	onlyNew := newReceiver(t, []string{next}, nil)
	onlyOld := newReceiver(t, []string{old}, nil)
	neither := newReceiver(t, []string{other}, nil)
	d := newDispatcher(t, Options{Attempts: 1},
		subscription(t, "new", onlyNew.srv.URL, time.Second, old, next),
		subscription(t, "old", onlyOld.srv.URL, time.Second, old, next),
		subscription(t, "neither", neither.srv.URL, time.Second, old, next))
	d.Emit(context.Background(), ingested("1.0.0"))
	closeNow(t, d)
	for name, rc := range map[string]*receiver{"only the new": onlyNew, "only the old": onlyOld} {
		if _, verified, bad := rc.counts(); verified != 1 || len(bad) > 0 {
			t.Errorf("%s secret: %d verified, refused %v", name, verified, bad)
		}
	}
	if _, verified, bad := neither.counts(); verified != 0 || len(bad) != 1 || !strings.Contains(bad[0], "no matching signature") {
		t.Errorf("neither secret: %d verified, refused %v", verified, bad)
	}
}

// TestFiltersDecideWhatIsSent: each subscription receives only the
// events its filters take.
func TestFiltersDecideWhatIsSent(t *testing.T) {
	secret := NewSecret()
	policy := newReceiver(t, []string{secret}, nil)
	acme := newReceiver(t, []string{secret}, nil)
	ps := subscription(t, "policy", policy.srv.URL, time.Second, secret)
	ps.Types = []string{"io.oci-tofu.policy.*"}
	as := subscription(t, "acme", acme.srv.URL, time.Second, secret)
	as.Addresses = []string{"registry.example.com/acme/*"}
	d := newDispatcher(t, Options{}, ps, as)
	for _, e := range every() {
		d.Emit(context.Background(), e)
	}
	d.Emit(context.Background(), events.New(source, events.VersionIngested{Address: "registry.example.com/other/aws", Version: "1.0.0"}))
	closeNow(t, d)
	if _, n, _ := policy.counts(); n != 4 {
		t.Errorf("policy.*: %d events, not 4", n)
	}
	for _, e := range policy.got {
		if !strings.HasPrefix(e.Type, "io.oci-tofu.policy.") {
			t.Errorf("policy.*: got %s", e.Type)
		}
	}
	if _, n, _ := acme.counts(); n != 8 { // every one but audit.lost (no address) and other/aws
		t.Errorf("acme/*: %d events, not 8", n)
	}
}

// TestNeverAnswers: an endpoint that never answers costs each attempt
// its timeout (that Emit does not wait for it:
// TestEmitDoesNotWaitForDelivery).
func TestNeverAnswers(t *testing.T) {
	rc := newReceiver(t, nil, func(_ int, _ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	secret := NewSecret()
	d := newDispatcher(t, Options{Attempts: 2}, subscription(t, "dead", rc.srv.URL, 50*time.Millisecond, secret))
	start := time.Now()
	for i := range 100 {
		d.Emit(context.Background(), ingested(fmt.Sprintf("1.0.%d", i)))
	}
	eventually(t, "the first delivery failed", func() bool { return len(d.Recent()) > 0 })
	took := time.Since(start)
	r := d.Recent()[0]
	if r.Outcome != OutcomeFailed || r.Attempts != 2 || r.StatusCode != 0 || r.Error != "no answer within the timeout" {
		t.Errorf("recent: %+v", r)
	}
	if took < 100*time.Millisecond {
		t.Errorf("two attempts of 50 ms failed in %s", took)
	}
	// Close gives up on the 99 left at its deadline, and drops them.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := d.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close: %v", err)
	}
	failed := testutil.ToFloat64(d.metrics.deliveries.WithLabelValues("dead", OutcomeFailed))
	dropped := testutil.ToFloat64(d.metrics.dropped.WithLabelValues("dead"))
	if failed+dropped != 100 || dropped < 90 {
		t.Errorf("%v failed and %v dropped, of 100", failed, dropped)
	}
}

// TestSlowAnswer: an answer slower than usual but within the timeout is
// delivered; one beyond it is retried.
func TestSlowAnswer(t *testing.T) {
	slow := func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		} else {
			time.Sleep(20 * time.Millisecond)
		}
		w.WriteHeader(http.StatusOK)
	}
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, slow)
	d := newDispatcher(t, Options{}, subscription(t, "slow", rc.srv.URL, 100*time.Millisecond, secret))
	d.Emit(context.Background(), ingested("1.0.0"))
	closeNow(t, d)
	r := d.Recent()[0]
	if r.Outcome != OutcomeDelivered || r.Attempts != 2 || r.StatusCode != http.StatusOK {
		t.Errorf("recent: %+v", r)
	}
	if rc.ids[0] != rc.ids[1] || rc.ids[0] != r.EventID {
		t.Errorf("webhook-id not stable across retries: %v", rc.ids)
	}
}

// TestRedirectIsNotFollowed: a 3xx is a failed attempt; its target is
// never asked.
func TestRedirectIsNotFollowed(t *testing.T) {
	secret := NewSecret()
	target := newReceiver(t, []string{secret}, nil)
	redirect := newReceiver(t, []string{secret}, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL, http.StatusTemporaryRedirect)
	})
	d := newDispatcher(t, Options{Attempts: 3}, subscription(t, "moved", redirect.srv.URL, time.Second, secret))
	d.Emit(context.Background(), ingested("1.0.0"))
	closeNow(t, d)
	if n, _, _ := target.counts(); n != 0 {
		t.Errorf("the redirect was followed: %d requests", n)
	}
	if n, _, _ := redirect.counts(); n != 3 {
		t.Errorf("%d attempts, not 3", n)
	}
	r := d.Recent()[0]
	if r.Outcome != OutcomeFailed || r.StatusCode != http.StatusTemporaryRedirect || !strings.Contains(r.Error, "redirects are not followed") {
		t.Errorf("recent: %+v", r)
	}
	if got := testutil.ToFloat64(d.metrics.deliveries.WithLabelValues("moved", OutcomeFailed)); got != 1 {
		t.Errorf("failed counter %v", got)
	}
}

// TestServerErrorForever: retries stop after Attempts, each signed with
// its own timestamp and the same id.
func TestServerErrorForever(t *testing.T) {
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write(bytes.Repeat([]byte("x"), 1<<20)) // more than is read
	})
	d := newDispatcher(t, Options{Attempts: 4}, subscription(t, "broken", rc.srv.URL, time.Second, secret))
	d.Emit(context.Background(), ingested("1.0.0"))
	closeNow(t, d)
	if n, verified, bad := rc.counts(); n != 4 || verified != 4 || len(bad) > 0 {
		t.Errorf("%d requests, %d verified, not 4; refused %v", n, verified, bad)
	}
	r := d.Recent()[0]
	if r.Outcome != OutcomeFailed || r.Attempts != 4 || r.StatusCode != 500 {
		t.Errorf("recent: %+v", r)
	}
	if got := testutil.ToFloat64(d.metrics.attempts.WithLabelValues("broken")); got != 4 {
		t.Errorf("attempts counter %v", got)
	}
}

// TestGoneStops: a 410 ends the delivery at once and pauses the
// subscription; Apply resumes it.
func TestGoneStops(t *testing.T) {
	secret := NewSecret()
	var gone atomic.Bool
	gone.Store(true)
	rc := newReceiver(t, []string{secret}, func(_ int, w http.ResponseWriter, _ *http.Request) {
		if gone.Load() {
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	s := subscription(t, "gone", rc.srv.URL, time.Second, secret)
	d := newDispatcher(t, Options{}, s)
	d.Emit(context.Background(), ingested("1.0.0"))
	d.Emit(context.Background(), ingested("1.0.1"))
	eventually(t, "two deliveries", func() bool { return len(d.Recent()) == 2 })
	if n, _, _ := rc.counts(); n != 1 {
		t.Errorf("%d requests after a 410, not 1", n)
	}
	if r := d.Recent(); r[1].Outcome != OutcomeGone || r[1].Attempts != 1 || r[1].StatusCode != 410 || r[0].Outcome != OutcomeGone || r[0].Attempts != 0 {
		t.Errorf("recent: %+v", r)
	}
	gone.Store(false)
	if err := d.Apply(&Config{Subscriptions: []Subscription{s}}); err != nil {
		t.Fatal(err)
	}
	d.Emit(context.Background(), ingested("1.0.2"))
	closeNow(t, d)
	if r := d.Recent()[0]; r.Outcome != OutcomeDelivered || r.StatusCode != http.StatusAccepted {
		t.Errorf("after Apply: %+v", r)
	}
}

// TestFloodToDeadEndpoint: of 100,000 Emits to an endpoint that never
// answers, what is held stays the queue's bound: the rest is dropped and
// counted (their time is logged beside their marshalling's, not judged).
func TestFloodToDeadEndpoint(t *testing.T) {
	rc := newReceiver(t, nil, func(_ int, _ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	d := newDispatcher(t, Options{Attempts: 1}, subscription(t, "dead", rc.srv.URL, 10*time.Second, NewSecret()))
	const n = 100000
	e := ingested("1.0.0")
	// The baseline: what marshalling the n events alone takes here, now
	// (a loaded machine, -race, slow both).
	start := time.Now()
	for range n {
		e.ID = events.NewID()
		e.MarshalJSON()
	}
	baseline := time.Since(start)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start = time.Now()
	for range n {
		e.ID = events.NewID()
		d.Emit(context.Background(), e)
	}
	took := time.Since(start)
	t.Logf("%d Emits in %s, their marshalling alone %s", n, took, baseline)
	runtime.GC()
	runtime.ReadMemStats(&after)
	queued := d.workers[0].q.len()
	dropped := testutil.ToFloat64(d.metrics.dropped.WithLabelValues("dead"))
	// One event or a few (a loaded machine passing 10 s) in flight.
	if queued > DefaultQueueSize || queued < DefaultQueueSize-1 || dropped < n-DefaultQueueSize-10 || int(dropped)+queued > n {
		t.Errorf("%d queued, %v dropped of %d", queued, dropped, n)
	}
	if got := queueGauge(t, d, "dead"); int(got) != queued {
		t.Errorf("queue gauge %v, queue %d", got, queued)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
		t.Errorf("the heap grew by %d bytes", grew)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := d.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close: %v", err)
	}
	if got := testutil.ToFloat64(d.metrics.dropped.WithLabelValues("dead")); got < n-10 {
		t.Errorf("after Close, %v dropped", got)
	}
}

// TestCloseDrains: Close waits for the queued events to be delivered.
func TestCloseDrains(t *testing.T) {
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, func(_ int, w http.ResponseWriter, _ *http.Request) {
		time.Sleep(2 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	})
	d := newDispatcher(t, Options{}, subscription(t, "a", rc.srv.URL, time.Second, secret))
	for i := range 50 {
		d.Emit(context.Background(), ingested(fmt.Sprintf("1.0.%d", i)))
	}
	closeNow(t, d)
	if _, n, bad := rc.counts(); n != 50 || len(bad) > 0 {
		t.Errorf("%d delivered of 50 (refused %v)", n, bad)
	}
	d.Emit(context.Background(), ingested("2.0.0")) // after Close: dropped, no panic
	if err := d.Apply(&Config{}); err == nil {
		t.Error("Apply after Close")
	}
	if err := d.Close(context.Background()); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

type claimer struct {
	mu   sync.Mutex
	keys []string
	err  error
}

func (c *claimer) Claim(_ context.Context, subscription, id string, _ []byte) (Claim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys = append(c.keys, subscription+"/"+id)
	if len(c.keys)%2 == 1 {
		return Claim{Hold: noHold{}}, c.err
	}
	return Claim{Ended: true}, c.err
}

// TestClaimer: a delivery the Claimer refuses is skipped, unsent; a
// Claimer failing delivers.
func TestClaimer(t *testing.T) {
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, nil)
	c := &claimer{}
	d := newDispatcher(t, Options{Claimer: c}, subscription(t, "c", rc.srv.URL, time.Second, secret))
	for i := range 4 {
		d.Emit(context.Background(), ingested(fmt.Sprintf("1.0.%d", i)))
	}
	closeNow(t, d)
	if _, n, _ := rc.counts(); n != 2 {
		t.Errorf("%d delivered, not 2 of 4", n)
	}
	if got := testutil.ToFloat64(d.metrics.deliveries.WithLabelValues("c", OutcomeSkipped)); got != 2 {
		t.Errorf("skipped %v", got)
	}
	if len(c.keys) != 4 || !strings.HasPrefix(c.keys[0], "c/") {
		t.Errorf("claims %v", c.keys)
	}

	failing := &claimer{err: errors.New("redis down")}
	d = newDispatcher(t, Options{Claimer: failing}, subscription(t, "c", rc.srv.URL, time.Second, secret))
	for i := range 4 {
		d.Emit(context.Background(), ingested(fmt.Sprintf("2.0.%d", i)))
	}
	closeNow(t, d)
	if _, n, _ := rc.counts(); n != 6 {
		t.Errorf("a failing Claimer: %d delivered, not 4 more", n-2)
	}
}

// TestRecentIsBounded keeps the last 50, the latest first.
func TestRecentIsBounded(t *testing.T) {
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, nil)
	d := newDispatcher(t, Options{}, subscription(t, "r", rc.srv.URL, time.Second, secret))
	var last string
	for range 70 {
		e := ingested("1.0.0")
		last = e.ID
		d.Emit(context.Background(), e)
	}
	closeNow(t, d)
	r := d.Recent()
	if len(r) != RecentDeliveries || r[0].EventID != last {
		t.Errorf("%d recent, the first %s not %s", len(r), r[0].EventID, last)
	}
}

// TestReload: a file's new settings apply to the queued subscription;
// a file that does not parse changes nothing; a removed subscription is
// sent nothing more.
func TestReload(t *testing.T) {
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, nil)
	file := filepath.Join(t.TempDir(), "events.yaml")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("subscriptions:\n- name: r\n  url: " + rc.srv.URL + "\n  secrets: [" + secret + "]\n  types: [io.oci-tofu.policy.*]\n")
	d := newDispatcher(t, Options{})
	if err := d.Reload(file); err != nil {
		t.Fatal(err)
	}
	send := func() {
		for _, e := range every() {
			d.Emit(context.Background(), e)
		}
	}
	send()
	eventually(t, "4 policy events", func() bool { _, n, _ := rc.counts(); return n == 4 })
	write("subscriptions:\n- name: r\n  url: " + rc.srv.URL + "\n  secrets: [" + secret + "]\n  types: [io.oci-tofu.audit.lost.v1]\n")
	if err := d.Reload(file); err != nil {
		t.Fatal(err)
	}
	write("subscriptions: [\n")
	if err := d.Reload(file); err == nil {
		t.Error("a bad file reloaded")
	}
	send()
	eventually(t, "audit.lost", func() bool { _, n, _ := rc.counts(); return n == 5 })
	write("subscriptions: []\n")
	if err := d.Reload(file); err != nil {
		t.Fatal(err)
	}
	send()
	if err := d.Apply(nil); err != nil {
		t.Fatal(err)
	}
	send()
	closeNow(t, d)
	if n, _, _ := rc.counts(); n != 5 {
		t.Errorf("%d requests, not 5", n)
	}
}

// TestLogsAndMetricsHoldNoSecrets: a failing endpoint whose path and
// query carry a token: the log names its host only; the metrics its
// subscription.
func TestLogsAndMetricsHoldNoSecrets(t *testing.T) {
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) })
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sub := subscription(t, "tokened", rc.srv.URL+"/hook/PATHTOKEN?token=QUERYTOKEN", time.Second, secret)
	d := newDispatcher(t, Options{Attempts: 2, Logger: logger}, sub)
	d.Emit(context.Background(), ingested("1.0.0"))
	closeNow(t, d)
	// A refused connection's error too (the server gone).
	rc.srv.Close()
	d = newDispatcher(t, Options{Attempts: 1, Logger: logger}, sub)
	d.Emit(context.Background(), ingested("1.0.1"))
	closeNow(t, d)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(d.Collector()); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	text := logs.String()
	mu.Unlock()
	for _, mf := range mfs {
		text += mf.String()
	}
	if !strings.Contains(text, "a delivery failed") || !strings.Contains(text, `subscription="tokened"`) && !strings.Contains(text, "tokened") {
		t.Fatalf("no failure logged or counted:\n%s", text)
	}
	for _, s := range []string{"PATHTOKEN", "QUERYTOKEN", secret, strings.TrimPrefix(secret, SecretPrefix)} {
		if strings.Contains(text, s) {
			t.Errorf("the logs or metrics tell %q:\n%s", s, text)
		}
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestBackoff doubles, is capped, and jitters within half to all.
func TestBackoff(t *testing.T) {
	d := &Dispatcher{opts: Options{Backoff: time.Second, MaxBackoff: 30 * time.Second}}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 6: 30 * time.Second, 80: 30 * time.Second} {
		for range 100 {
			if b := d.backoff(n); b < want/2 || b > want {
				t.Fatalf("backoff(%d) = %s, not within %s..%s", n, b, want/2, want)
			}
		}
	}
}

// queueGauge is oci_tofu_webhook_queue_length of subscription, as a
// registry gathers it.
func queueGauge(t *testing.T, d *Dispatcher, subscription string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(d.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "oci_tofu_webhook_queue_length" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == subscription {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no queue length of %s", subscription)
	return 0
}

// TestHTTPS delivers over TLS with the caller's transport (here the
// test server's, which trusts its certificate).
func TestHTTPS(t *testing.T) {
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, nil)
	tls := httptest.NewTLSServer(rc.srv.Config.Handler)
	t.Cleanup(tls.Close)
	cfg, err := Parse([]byte("subscriptions:\n- name: tls\n  url: "+tls.URL+"/hook\n  secrets: ["+secret+"]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	d := New(cfg, fast(Options{Transport: tls.Client().Transport}))
	d.Emit(context.Background(), ingested("1.0.0"))
	closeNow(t, d)
	if _, n, bad := rc.counts(); n != 1 || len(bad) > 0 {
		t.Errorf("%d verified over TLS, refused %v", n, bad)
	}
}

// TestEmitDoesNotWaitForDelivery: every Emit returns while the first
// delivery is held by its endpoint (a wait for it would never return).
func TestEmitDoesNotWaitForDelivery(t *testing.T) {
	release := make(chan struct{})
	held := make(chan struct{}, 1)
	rc := newReceiver(t, nil, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case held <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	d := newDispatcher(t, Options{Attempts: 1}, subscription(t, "held", rc.srv.URL, MaxTimeout, NewSecret()))
	t.Cleanup(func() { close(release) })
	for i := range 100 {
		d.Emit(context.Background(), ingested(fmt.Sprintf("1.0.%d", i)))
	}
	<-held // the first delivery reached the endpoint, which holds it
	if ended := d.Recent(); len(ended) != 0 {
		t.Errorf("a delivery ended while its endpoint held it: %+v", ended)
	}
}

// heldClaimer answers "held by another" heldFor times per event, then
// gives the delivery, counting how holds end.
type heldClaimer struct {
	heldFor int
	mu      sync.Mutex
	asked   map[string]int
	done    int
	aband   int
}

func (c *heldClaimer) Claim(_ context.Context, _, id string, entry []byte) (Claim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(entry) == 0 {
		return Claim{}, errors.New("no entry to keep")
	}
	c.asked[id]++
	if c.heldFor >= 0 && c.asked[id] > c.heldFor {
		return Claim{Hold: c}, nil
	}
	return Claim{}, nil
}

func (c *heldClaimer) Done(context.Context)    { c.mu.Lock(); c.done++; c.mu.Unlock() }
func (c *heldClaimer) Abandon(context.Context) { c.mu.Lock(); c.aband++; c.mu.Unlock() }

// TestClaimHeldElsewhere: a delivery another process holds is asked for
// again until it is this one's, then delivered and its hold ended as
// done; one held until the worker stops is dropped unsent.
func TestClaimHeldElsewhere(t *testing.T) {
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, nil)
	c := &heldClaimer{heldFor: 3, asked: map[string]int{}}
	d := newDispatcher(t, Options{Claimer: c}, subscription(t, "h", rc.srv.URL, time.Second, secret))
	e := ingested("1.0.0")
	d.Emit(context.Background(), e)
	closeNow(t, d)
	if _, n, bad := rc.counts(); n != 1 || len(bad) > 0 || c.asked[e.ID] != 4 || c.done != 1 || c.aband != 0 {
		t.Errorf("%d delivered (refused %v), asked %d times, %d done, %d abandoned", n, bad, c.asked[e.ID], c.done, c.aband)
	}

	forever := &heldClaimer{heldFor: -1, asked: map[string]int{}}
	d = newDispatcher(t, Options{Claimer: forever}, subscription(t, "h", rc.srv.URL, time.Second, secret))
	e = ingested("1.0.1")
	d.Emit(context.Background(), e)
	eventually(t, "asked twice", func() bool { forever.mu.Lock(); defer forever.mu.Unlock(); return forever.asked[e.ID] >= 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := d.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close: %v", err)
	}
	if n, _, _ := rc.counts(); n != 1 {
		t.Errorf("%d requests: the held delivery was sent", n-1)
	}
	if got := testutil.ToFloat64(d.metrics.dropped.WithLabelValues("h")); got != 1 || len(d.Recent()) != 0 {
		t.Errorf("dropped %v, recent %+v", got, d.Recent())
	}
}
