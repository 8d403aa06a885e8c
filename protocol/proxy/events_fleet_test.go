package proxy

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// With the shared state on Redis, serve claims each delivery there: the
// denial's event, delivered, is marked done on Redis under the shared
// state's prefix, so no other replica delivers it again.
func TestEventsClaimedOnSharedRedis(t *testing.T) {
	srv := testenv.StartRedis(t)
	// A generous operation timeout: a claim that times out is delivered
	// unclaimed, and this test looks at the claim.
	shared, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: srv.URL(), OpTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.Close() })
	rc := newHookReceiver(t)
	dir, open := layoutStore(t)
	pushAttested(t, open("test", "hello"), "1.1.0", nil)
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: mustPolicy(t, eventsPolicy),
		RegistryHostname: "example.com", Shared: shared, EventsFile: eventsFile(t, t.TempDir(), map[string]string{"all": rc.URL}, rc.Secret)})
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, `denied by the policy's rule "hello"`)
	denied := rc.ofType(t, events.TypePolicyDenied, 1)[0]
	c, err := redis.DialURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := "oci-tofu:events:claim:all:" + denied.ID
	var mark string
	for deadline := time.Now().Add(10 * time.Second); mark != "done"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s is %q, not done", key, mark)
		}
		mark, _ = redis.String(c.Do("GET", key))
	}
}

// Three replicas on one Redis, each refusing the same denied version:
// the denial is one event (its ID the same in each, delivered by the
// first to claim it, skipped by the others).
func TestEventsFleetSendsADecisionOnce(t *testing.T) {
	srv := testenv.StartRedis(t)
	rc := newHookReceiver(t)
	dir, open := layoutStore(t)
	pushAttested(t, open("test", "hello"), "1.1.0", nil)
	file := eventsFile(t, t.TempDir(), map[string]string{"all": rc.URL}, rc.Secret)
	var fleet []*proxy
	for range 3 {
		shared, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: srv.URL(), OpTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { shared.Close() })
		fleet = append(fleet, startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
			Policy: mustPolicy(t, eventsPolicy), RegistryHostname: "example.com", Shared: shared, EventsFile: file}))
	}
	for _, p := range fleet {
		p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, `denied by the policy's rule "hello"`)
	}
	// The two replicas that did not deliver the denial skipped it (the
	// only event all three emit: none of the stored versions is
	// deprecated or revoked) before the receiver's events are counted.
	skipped := func() (n float64) {
		for _, p := range fleet {
			for _, line := range strings.Split(string(p.get(t, "/metrics").Body), "\n") {
				if v, ok := strings.CutPrefix(line, `oci_tofu_webhook_deliveries_total{outcome="skipped",subscription="all"} `); ok {
					f, _ := strconv.ParseFloat(v, 64)
					n += f
				}
			}
		}
		return n
	}
	for deadline := time.Now().Add(20 * time.Second); skipped() < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%v deliveries skipped, want 2", skipped())
		}
	}
	var denials []events.Event
	got, _ := rc.events()
	for _, e := range got {
		if e.Type == events.TypePolicyDenied {
			denials = append(denials, e)
		}
	}
	if len(denials) != 1 {
		t.Errorf("%d policy.denied events from three replicas, want 1: %+v", len(denials), denials)
	}
}
