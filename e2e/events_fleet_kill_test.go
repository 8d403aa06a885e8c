package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
)

// holdingReceiver is a webhook endpoint that verifies every delivery's
// signature and holds the first delivery of each event ID open, never
// answering it (until the sender goes away or the test ends): the
// delivering replica is then "mid-delivery" for as long as the test
// wants. Every later delivery is answered 204.
type holdingReceiver struct {
	t       *testing.T
	hook    *standardwebhooks.Webhook
	file    string // the subscriptions file naming it
	release chan struct{}

	mu   sync.Mutex
	got  []events.Event // every verified delivery, held ones included, in arrival order
	held map[string]bool
	bad  []string
}

func startHoldingReceiver(t *testing.T) *holdingReceiver {
	t.Helper()
	secret := webhook.NewSecret()
	hook, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	rc := &holdingReceiver{t: t, hook: hook, release: make(chan struct{}), held: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(rc.release) }) // runs before srv.Close
	rc.file = filepath.Join(t.TempDir(), "events.yaml")
	// The attempt's timeout is longer than the test: a held delivery
	// ends only when its replica dies.
	yaml := fmt.Sprintf("subscriptions:\n- name: all\n  url: %s/hook\n  secrets: [%s]\n  timeout: 2m\n", srv.URL, secret)
	if err := os.WriteFile(rc.file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return rc
}

func (rc *holdingReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	hold := false
	rc.mu.Lock()
	if err := rc.hook.Verify(body, r.Header); err != nil {
		rc.bad = append(rc.bad, "signature: "+err.Error())
	} else if e, err := events.Parse(body); err != nil {
		rc.bad = append(rc.bad, "event: "+err.Error())
	} else if r.Header.Get("webhook-id") != e.ID {
		rc.bad = append(rc.bad, fmt.Sprintf("webhook-id %q for the event %q", r.Header.Get("webhook-id"), e.ID))
	} else {
		rc.got = append(rc.got, e)
		hold = !rc.held[e.ID]
		rc.held[e.ID] = true
	}
	rc.mu.Unlock()
	if hold {
		select {
		case <-r.Context().Done(): // the replica was killed
		case <-rc.release:
		}
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// deliveries waits (at most d) until n deliveries of events of type typ
// and subject arrived, and returns those there are then, failing the
// test on a delivery that did not verify.
func (rc *holdingReceiver) deliveries(typ, subject string, n int, d time.Duration) []events.Event {
	rc.t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		rc.mu.Lock()
		var out []events.Event
		for _, e := range rc.got {
			if e.Type == typ && e.Subject == subject {
				out = append(out, e)
			}
		}
		bad := rc.bad
		rc.bad = nil
		rc.mu.Unlock()
		for _, b := range bad {
			rc.t.Errorf("a delivery was refused: %s", b)
		}
		if len(out) >= n || time.Now().After(deadline) {
			return out
		}
	}
}

// replicaSource is replica i's --public-url, the source of what it sends.
func replicaSource(i int) string { return fmt.Sprintf("https://replica-%d.example.test", i) }

// sourceReplica is the index of the replica whose source s is, or -1.
func sourceReplica(s string, n int) int {
	for i := range n {
		if s == replicaSource(i) {
			return i
		}
	}
	return -1
}

// webhookMetric sums replica r's series of the metric name whose labels
// include each of labels (`outcome="skipped"`).
func webhookMetric(t *testing.T, f *testenv.Fleet, r *testenv.Replica, name string, labels ...string) int {
	t.Helper()
	sum := 0
	for _, line := range strings.Split(replicaMetrics(t, f, r), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(series, name+"{") {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(series, l)
		}
		if v, err := strconv.Atoi(value); err == nil && match {
			sum += v
		}
	}
	return sum
}

// waitDeliveriesEnded waits (at most 20 s) until replica r has ended at
// least n deliveries, delivered or skipped (found done).
func waitDeliveriesEnded(t *testing.T, f *testenv.Fleet, r *testenv.Replica, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got := webhookMetric(t, f, r, "oci_tofu_webhook_deliveries_total", `outcome="delivered"`) +
			webhookMetric(t, f, r, "oci_tofu_webhook_deliveries_total", `outcome="skipped"`)
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s ended %d deliveries after 20 s, want %d", r.URL, got, n)
		}
	}
}

// fetchVersionFrom fetches a network mirror version document and every
// archive it lists from replica r itself (the archives' URLs name the
// replica's public URL, which no one serves: only their paths are kept).
func fetchVersionFrom(t *testing.T, f *testenv.Fleet, r *testenv.Replica, version string) {
	t.Helper()
	archives, err := mirrorArchives(f.Client, r.URL+"/v1/mirror/example.com/test/hello/"+version+".json")
	if err != nil {
		t.Fatal(err)
	}
	for u, sha := range archives {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		if err := fetchChecked(f.Client, r.URL+p.RequestURI(), sha); err != nil {
			t.Fatal(err)
		}
	}
}

// The lease (15 s) and the outbox sweep (5 s) of docs/events.md, "A
// fleet", and the slack this shared machine needs on top.
const (
	eventLease = 15 * time.Second
	eventSweep = 5 * time.Second
	eventSlack = 10 * time.Second
)

// Three real `oci-tofu serve` replicas sharing a Redis, one subscriptions
// file and one Distribution (docs/events.md, "A fleet"):
//   - a version the policy denies, asked of each replica, is one
//     policy.denied event (the same ID on each: the decision and the UTC
//     day); the receiver holds its first delivery open, and the replica
//     delivering it (named by the event's source, its --public-url) is
//     SIGKILLed: another replica delivers it within a lease, with the
//     same webhook-id, and the third finds it done: twice in all;
//   - a pull-through served by one replica only is a version.ingested
//     only it emits; held and killed likewise, it is recovered from the
//     Redis outbox by the replica left and delivered with the same ID.
//
// Every delivery is verified with the Standard Webhooks reference library.
func TestFleetEventsSurviveAKilledReplica(t *testing.T) {
	origin := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	redis := testenv.StartRedis(t)
	rc := startHoldingReceiver(t)
	policyFile := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(policyFile, []byte(helloPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 3
	f := testenv.StartFleetEach(t, ociTofu, n, nil, func(i int) []string {
		return append(fleetArgs(reg, origin, redis), "--policy", policyFile, "--events-file", rc.file, "--public-url", replicaSource(i))
	})

	// Each replica decides the denial; the first to claim it delivers.
	const denied = "example.com/test/hello@1.1.0"
	for _, r := range f.Replicas {
		if code, err := getStatus(f.Client, r.URL+"/v1/mirror/example.com/test/hello/1.1.0.json"); err != nil || code != http.StatusNotFound {
			t.Fatalf("the denied 1.1.0 of %s: %d %v, want 404", r.URL, code, err)
		}
	}
	first := rc.deliveries(events.TypePolicyDenied, denied, 1, 20*time.Second)
	if len(first) != 1 {
		t.Fatalf("%d deliveries of policy.denied %s after 20 s, want 1", len(first), denied)
	}
	holder := sourceReplica(first[0].Source, n)
	if holder < 0 {
		t.Fatalf("policy.denied from %q, which is no replica's", first[0].Source)
	}
	f.Replicas[holder].Kill()
	killed := time.Now()
	again := rc.deliveries(events.TypePolicyDenied, denied, 2, eventLease+eventSlack)
	if len(again) != 2 {
		t.Fatalf("%d deliveries of policy.denied %s %v after replica %d was killed, want 2 (the held one and one more)",
			len(again), denied, time.Since(killed).Round(time.Millisecond), holder)
	}
	t.Logf("policy.denied delivered again %v after the kill", time.Since(killed).Round(time.Millisecond))
	// Another replica's own copy (its source), or the held one recovered
	// from the outbox (the holder's source): the same event either way.
	if again[1].ID != first[0].ID || sourceReplica(again[1].Source, n) < 0 {
		t.Errorf("delivered again as %s from %s; want %s from a replica", again[1].ID, again[1].Source, first[0].ID)
	}
	var alive []*testenv.Replica
	for i, r := range f.Replicas {
		if i != holder {
			alive = append(alive, r)
		}
	}
	for _, r := range alive { // each delivered its copy or found it done
		waitDeliveriesEnded(t, f, r, 1)
	}
	if got := rc.deliveries(events.TypePolicyDenied, denied, 3, 0); len(got) != 2 {
		t.Errorf("policy.denied %s delivered %d times, want 2", denied, len(got))
	}

	// A pull-through only one replica serves: only it emits.
	const ingested = "example.com/test/hello@1.0.0"
	puller, left := alive[0], alive[1]
	fetchVersionFrom(t, f, puller, "1.0.0")
	waitForTag(t, reg, "pulled/example.com/test/hello", "1.0.0")
	first = rc.deliveries(events.TypeVersionIngested, ingested, 1, 20*time.Second)
	if len(first) != 1 || first[0].Source != replicaSource(slices.Index(f.Replicas, puller)) {
		t.Fatalf("version.ingested %s: %+v, want one delivery from %s", ingested, first, puller.URL)
	}
	recovered := webhookMetric(t, f, left, "oci_tofu_webhook_recovered_total")
	puller.Kill()
	killed = time.Now()
	again = rc.deliveries(events.TypeVersionIngested, ingested, 2, eventLease+eventSweep+eventSlack)
	if len(again) != 2 {
		t.Fatalf("%d deliveries of version.ingested %s %v after %s was killed, want 2 (recovered from the outbox)",
			len(again), ingested, time.Since(killed).Round(time.Millisecond), puller.URL)
	}
	t.Logf("version.ingested recovered and delivered %v after the kill", time.Since(killed).Round(time.Millisecond))
	// The kept event is delivered as the killed replica made it (its
	// source); only one replica is left to deliver it.
	if again[1].ID != first[0].ID || again[1].Source != first[0].Source {
		t.Errorf("recovered as %s from %s; want %s from %s", again[1].ID, again[1].Source, first[0].ID, first[0].Source)
	}
	if got := webhookMetric(t, f, left, "oci_tofu_webhook_recovered_total"); got <= recovered {
		t.Errorf("the replica left counts %d recovered events, %d before: it did not recover the killed one's", got, recovered)
	}
}

// getStatus is the status code of a GET of u.
func getStatus(c *http.Client, u string) (int, error) {
	resp, err := c.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, nil
}
