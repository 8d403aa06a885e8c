package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// replica is one process of a fleet: its own connections to the shared
// Redis, and its dispatcher claiming deliveries there.
type replica struct {
	store *sharedstate.Redis
	d     *Dispatcher
	log   *syncBuffer
}

// newReplica is a replica on the Redis at url whose claims last lease
// unrenewed; it asks for deliveries to take over every 20 ms.
func newReplica(t *testing.T, url string, lease time.Duration, subs ...Subscription) *replica {
	t.Helper()
	log := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// A generous operation timeout: a loaded machine (-race) must not
	// turn a slow answer into an unasked claim (delivered anyway).
	store, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: url, OpTimeout: 5 * time.Second, BreakerOpen: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	claimer := FleetClaimer(store.Claims("events", sharedstate.ClaimOptions{Lease: lease}))
	d := newDispatcher(t, Options{Claimer: claimer, RecoverEvery: 20 * time.Millisecond, Logger: logger}, subs...)
	return &replica{store: store, d: d, log: log}
}

// kill stops the replica as a crash would, as far as the fleet sees:
// its claims are no longer renewed, and it asks Redis nothing more. Its
// dispatcher is abandoned where it is (a delivery held by the receiver
// stays held).
func (r *replica) kill() { r.store.Close() }

// count is the replica's deliveries that ended with outcome.
func (r *replica) count(subscription, outcome string) int {
	return int(testutil.ToFloat64(r.d.metrics.deliveries.WithLabelValues(subscription, outcome)))
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stable are n events whose IDs are derived from their content
// (events.StableID), as every replica seeing a happening makes it.
func stable(n int) []events.Event {
	out := make([]events.Event, n)
	for i := range out {
		v := fmt.Sprintf("1.0.%d", i)
		out[i] = ingested(v)
		out[i].ID = events.StableID("test", v)
	}
	return out
}

// idCounts is how many verified deliveries the receiver got of each ID.
func (rc *receiver) idCounts() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := map[string]int{}
	for _, e := range rc.got {
		n[e.ID]++
	}
	return n
}

// TestFleetDeliversEachEventOnce: three replicas sharing Redis each emit
// the same events at once: the receiver verifies each exactly once, and
// the replicas that did not deliver one skipped it.
func TestFleetDeliversEachEventOnce(t *testing.T) {
	srv := testenv.StartRedis(t)
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, nil)
	sub := subscription(t, "fleet", rc.srv.URL, 5*time.Second, secret)
	var replicas []*replica
	for range 3 {
		replicas = append(replicas, newReplica(t, srv.URL(), 5*time.Second, sub))
	}
	sent := stable(10)
	var wg sync.WaitGroup
	for _, r := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, e := range sent {
				r.d.Emit(context.Background(), e)
			}
		}()
	}
	wg.Wait()
	for _, r := range replicas {
		closeNow(t, r.d)
	}
	requests, verified, bad := rc.counts()
	if requests != len(sent) || verified != len(sent) || len(bad) > 0 {
		t.Fatalf("%d requests, %d verified, of %d events; refused %v", requests, verified, len(sent), bad)
	}
	got := rc.idCounts()
	for _, e := range sent {
		if got[e.ID] != 1 {
			t.Errorf("event %s received %d times", e.ID, got[e.ID])
		}
	}
	delivered, skipped := 0, 0
	for _, r := range replicas {
		delivered += r.count("fleet", OutcomeDelivered)
		skipped += r.count("fleet", OutcomeSkipped)
	}
	if delivered != len(sent) || skipped != 2*len(sent) {
		t.Errorf("the replicas delivered %d and skipped %d, not %d and %d", delivered, skipped, len(sent), 2*len(sent))
	}
}

// holdFirst is a receiver's answer that holds the first request until
// release is closed (or the request ends) and answers the others 204.
func holdFirst(held chan<- struct{}, release <-chan struct{}) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			close(held)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// TestFleetKilledReplicaMidDelivery: the replica delivering an event all
// three emitted is killed while the receiver holds its request,
// unanswered: when its lease expires, one of the others delivers the
// event, with the same ID; the third skips it.
func TestFleetKilledReplicaMidDelivery(t *testing.T) {
	srv := testenv.StartRedis(t)
	secret := NewSecret()
	held, release := make(chan struct{}), make(chan struct{})
	rc := newReceiver(t, []string{secret}, holdFirst(held, release))
	sub := subscription(t, "fleet", rc.srv.URL, MaxTimeout, secret)
	e := stable(1)[0]
	first := newReplica(t, srv.URL(), time.Second, sub)
	first.d.Emit(context.Background(), e)
	<-held // the first replica holds the claim and is delivering
	rest := []*replica{newReplica(t, srv.URL(), time.Second, sub), newReplica(t, srv.URL(), time.Second, sub)}
	t.Cleanup(func() { close(release) }) // before the receiver and the replicas close
	for _, r := range rest {
		r.d.Emit(context.Background(), e)
	}
	first.kill()
	for _, r := range rest {
		closeNow(t, r.d) // each ends its delivery: delivered, or skipped
	}
	requests, verified, bad := rc.counts()
	if requests != 2 || verified != 2 || len(bad) > 0 {
		t.Fatalf("%d requests, %d verified, not 2 (the one held, the one after); refused %v", requests, verified, bad)
	}
	if got := rc.idCounts(); got[e.ID] != 2 {
		t.Errorf("not the event's ID in both: %v", got)
	}
	delivered := rest[0].count("fleet", OutcomeDelivered) + rest[1].count("fleet", OutcomeDelivered)
	skipped := rest[0].count("fleet", OutcomeSkipped) + rest[1].count("fleet", OutcomeSkipped)
	// The third skips it once at least (it may also be handed the
	// event from the outbox, and skip it again).
	if delivered != 1 || skipped < 1 {
		t.Errorf("the others delivered %d and skipped %d, not 1 and at least 1", delivered, skipped)
	}
}

// TestFleetKilledReplicaOnlyItEmitted: an event only one replica emitted
// (a pull-through there) is kept in the fleet's outbox while it is
// delivered: that replica killed mid-delivery, another recovers it and
// delivers it, with the same ID, through the subscription's address
// filter (the recovered event keeps its address).
func TestFleetKilledReplicaOnlyItEmitted(t *testing.T) {
	srv := testenv.StartRedis(t)
	secret := NewSecret()
	held, release := make(chan struct{}), make(chan struct{})
	rc := newReceiver(t, []string{secret}, holdFirst(held, release))
	sub := subscription(t, "fleet", rc.srv.URL, MaxTimeout, secret)
	sub.Addresses = []string{"registry.example.com/acme/*"}
	var fleet []*replica
	for range 3 {
		fleet = append(fleet, newReplica(t, srv.URL(), time.Second, sub))
	}
	t.Cleanup(func() { close(release) })
	e := ingested("1.0.0") // a fresh ID: no other replica has it
	fleet[0].d.Emit(context.Background(), e)
	<-held
	fleet[0].kill()
	eventually(t, "another replica delivered the event", func() bool {
		return fleet[1].count("fleet", OutcomeDelivered)+fleet[2].count("fleet", OutcomeDelivered) == 1
	})
	for _, r := range fleet[1:] {
		closeNow(t, r.d)
	}
	deliveredTwice(t, rc, e.ID)
	recovered := testutil.ToFloat64(fleet[1].d.metrics.recovered.WithLabelValues("fleet")) +
		testutil.ToFloat64(fleet[2].d.metrics.recovered.WithLabelValues("fleet"))
	if recovered < 1 {
		t.Errorf("never recovered from the outbox")
	}
}

// TestFleetRedisDown: with the shared Redis down, every replica delivers
// what it emits: at least once, never lost.
func TestFleetRedisDown(t *testing.T) {
	srv := testenv.StartRedis(t)
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, nil)
	sub := subscription(t, "fleet", rc.srv.URL, 5*time.Second, secret)
	var replicas []*replica
	for range 3 {
		replicas = append(replicas, newReplica(t, srv.URL(), 5*time.Second, sub))
	}
	srv.Stop()
	sent := stable(5)
	for _, r := range replicas {
		for _, e := range sent {
			r.d.Emit(context.Background(), e)
		}
	}
	for _, r := range replicas {
		closeNow(t, r.d)
	}
	if requests, verified, bad := rc.counts(); requests != 3*len(sent) || verified != requests || len(bad) > 0 {
		t.Fatalf("%d requests, %d verified, not %d; refused %v", requests, verified, 3*len(sent), bad)
	}
	for id, n := range rc.idCounts() {
		if n != 3 {
			t.Errorf("event %s received %d times, not once per replica", id, n)
		}
	}
}

// TestFleetOutboxEntryMustVerify: an entry written into the outbox by
// someone who does not know the subscription's secret is never
// delivered; one sealed with it is.
func TestFleetOutboxEntryMustVerify(t *testing.T) {
	srv := testenv.StartRedis(t)
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, nil)
	sub := subscription(t, "fleet", rc.srv.URL, 5*time.Second, secret)
	forged, genuine := ingested("6.6.6"), ingested("1.2.3")
	conn, err := redis.Dial("tcp", srv.Addr, redis.DialPassword(srv.Password))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	put := func(e events.Event, key []byte) {
		body, _ := e.MarshalJSON()
		entry := sealEntry(key, "fleet", time.Now(), body)
		if _, err := conn.Do("SET", "oci-tofu:events:entry:fleet:"+e.ID, entry, "PX", 60000); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Do("ZADD", "oci-tofu:events:outbox:fleet", 0, e.ID); err != nil {
			t.Fatal(err)
		}
	}
	put(forged, []byte("not the subscription's secret"))
	put(genuine, sub.secrets[0])
	r := newReplica(t, srv.URL(), time.Second, sub)
	eventually(t, "the genuine entry delivered", func() bool { return r.count("fleet", OutcomeDelivered) == 1 })
	eventually(t, "the forged entry refused", func() bool {
		return bytes.Contains([]byte(r.log.String()), []byte("does not verify"))
	})
	closeNow(t, r.d)
	got := rc.idCounts()
	if len(got) != 1 || got[genuine.ID] != 1 {
		t.Errorf("received %v, not the genuine event once", got)
	}
}

// TestFleetShutdownHandsOver: a replica closing while its delivery is
// held gives the claim up (its Close's deadline passed): another replica
// takes the event from the outbox at once, long before the lease (a
// minute) would have expired.
func TestFleetShutdownHandsOver(t *testing.T) {
	srv := testenv.StartRedis(t)
	secret := NewSecret()
	held, release := make(chan struct{}), make(chan struct{})
	rc := newReceiver(t, []string{secret}, holdFirst(held, release))
	t.Cleanup(func() { close(release) })
	sub := subscription(t, "fleet", rc.srv.URL, MaxTimeout, secret)
	closing := newReplica(t, srv.URL(), time.Minute, sub)
	other := newReplica(t, srv.URL(), time.Minute, sub)
	e := ingested("1.0.0")
	closing.d.Emit(context.Background(), e)
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := closing.d.Close(ctx); err == nil {
		t.Fatal("Close waited for a delivery the receiver holds")
	}
	eventually(t, "the other replica delivered the event", func() bool { return other.count("fleet", OutcomeDelivered) == 1 })
	if got := rc.idCounts(); got[e.ID] != 2 {
		t.Errorf("not the event's ID in both requests: %v", got)
	}
	if n := closing.count("fleet", OutcomeFailed); n != 1 {
		t.Errorf("the closing replica's delivery: %d failed, not 1", n)
	}
}

// TestFleetOneBrokenOutboxStopsNoOther: outboxes of other subscriptions
// that Redis cannot read (keys of the wrong type, planted or left by
// something else: WRONGTYPE) neither stop the recovery of the next
// subscription's entries nor open the shared cache's circuit breaker
// (Redis answered); each broken outbox is logged once, not every pass.
func TestFleetOneBrokenOutboxStopsNoOther(t *testing.T) {
	srv := testenv.StartRedis(t)
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, nil)
	var subs []Subscription
	conn := dialRedis(t, srv)
	for _, name := range []string{"broken1", "broken2", "broken3"} {
		broken := subscription(t, name, rc.srv.URL, 5*time.Second, secret)
		broken.Types = []string{events.TypeAuditLost} // the events below are fleet's alone
		subs = append(subs, broken)
		if _, err := conn.Do("SET", "oci-tofu:events:outbox:"+name, "not a sorted set"); err != nil {
			t.Fatal(err)
		}
	}
	fleet := subscription(t, "fleet", rc.srv.URL, 5*time.Second, secret)
	subs = append(subs, fleet)
	kept := ingested("1.2.3")
	plantEntry(t, conn, "fleet", kept, fleet.secrets[0])
	r := newReplica(t, srv.URL(), time.Second, subs...)
	eventually(t, "the fleet subscription's entry recovered and delivered", func() bool { return r.count("fleet", OutcomeDelivered) == 1 })
	time.Sleep(200 * time.Millisecond) // passes enough to log again, were it logged each pass
	later := ingested("1.2.4")
	r.d.Emit(context.Background(), later)
	closeNow(t, r.d)
	log := r.log.String()
	for _, name := range []string{"broken1", "broken2", "broken3"} {
		if n := strings.Count(log, "outbox could not be read\" subscription="+name); n != 1 {
			t.Errorf("the broken outbox of %s logged %d times, not once:\n%s", name, n, log)
		}
	}
	if strings.Contains(log, "claim failed") {
		t.Errorf("a claim failed (the breaker opened?):\n%s", log)
	}
	if got := rc.idCounts(); got[kept.ID] != 1 || got[later.ID] != 1 {
		t.Errorf("received %v: not the kept and the later event once each", got)
	}
}

// dialRedis is a plain connection to srv, for a test to plant keys.
func dialRedis(t *testing.T, srv *testenv.Redis) redis.Conn {
	t.Helper()
	conn, err := redis.Dial("tcp", srv.Addr, redis.DialPassword(srv.Password))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// plantEntry writes e into subscription's outbox, sealed with key now
// (due at once, no claim held), as a replica killed mid-delivery leaves
// it.
func plantEntry(t *testing.T, conn redis.Conn, subscription string, e events.Event, key []byte) {
	t.Helper()
	body, _ := e.MarshalJSON()
	plantRaw(t, conn, subscription, e.ID, sealEntry(key, subscription, time.Now(), body))
}

// plantRaw writes entry into subscription's outbox under id.
func plantRaw(t *testing.T, conn redis.Conn, subscription, id string, entry []byte) {
	t.Helper()
	if _, err := conn.Do("SET", "oci-tofu:events:entry:"+subscription+":"+id, entry, "PX", 60000); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Do("ZADD", "oci-tofu:events:outbox:"+subscription, 0, id); err != nil {
		t.Fatal(err)
	}
}

// TestFleetOutboxEntryOldRefused: entries sealed with the subscription's
// secret but more than a day ago (or a day ahead: a clock far off), so
// past their done marks, and entries of the format before entries
// carried a time (which cannot be told from those) are refused: an old
// entry replayed into the outbox is not sent again. One sealed now is.
func TestFleetOutboxEntryOldRefused(t *testing.T) {
	srv := testenv.StartRedis(t)
	secret := NewSecret()
	rc := newReceiver(t, []string{secret}, nil)
	sub := subscription(t, "fleet", rc.srv.URL, 5*time.Second, secret)
	conn := dialRedis(t, srv)
	key := sub.secrets[0]
	seal := func(v string, at time.Time) events.Event {
		e := ingested(v)
		body, _ := e.MarshalJSON()
		plantRaw(t, conn, "fleet", e.ID, sealEntry(key, "fleet", at, body))
		return e
	}
	seal("0.1.0", time.Now().Add(-25*time.Hour))
	seal("0.2.0", time.Now().Add(25*time.Hour))
	v1 := ingested("0.3.0")
	body, _ := v1.MarshalJSON()
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("oci-tofu webhook outbox v1\x00fleet\x00"))
	mac.Write(body)
	plantRaw(t, conn, "fleet", v1.ID, append(mac.Sum(nil), body...)) // the previous format: no time
	fresh := seal("1.0.0", time.Now().Add(-23*time.Hour))
	r := newReplica(t, srv.URL(), time.Second, sub)
	eventually(t, "the fresh entry delivered", func() bool { return r.count("fleet", OutcomeDelivered) == 1 })
	eventually(t, "the old entries refused", func() bool {
		log := r.log.String()
		return strings.Count(log, "sealed more than a day ago") == 2 && strings.Count(log, "does not verify") == 1
	})
	closeNow(t, r.d)
	if got := rc.idCounts(); len(got) != 1 || got[fresh.ID] != 1 {
		t.Errorf("received %v, not the fresh entry's event once", got)
	}
}

// An entry recovered and sealed again (its delivery claimed anew) keeps
// the time it was first sealed: handing an event from replica to
// replica does not make it young again.
func TestOutboxEntryKeepsFirstSealTime(t *testing.T) {
	sub := subscription(t, "fleet", "http://127.0.0.1:1", time.Second, NewSecret())
	d := newDispatcher(t, Options{}, sub)
	w := d.workers[0]
	body, _ := ingested("1.0.0").MarshalJSON()
	first := time.Now().Add(-20 * time.Hour).Truncate(time.Millisecond)
	item, err := w.open(w.sub.Load(), sealEntry(sub.secrets[0], "fleet", first, body), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	again, err := w.open(w.sub.Load(), w.seal(w.sub.Load(), item), time.Now())
	if err != nil || !again.sealed.Equal(first) {
		t.Fatalf("sealed again: %v at %s, not at %s", err, again.sealed, first)
	}
	if _, err := w.open(w.sub.Load(), w.seal(w.sub.Load(), item), first.Add(maxEntryAge+time.Minute)); err != errEntryOld {
		t.Fatalf("a day after it was first sealed: %v, not refused as old", err)
	}
}

// TestFleetRedisGoneMidLease: Redis becomes unreachable from the replica
// delivering an event only it emitted, mid-delivery (a partition: Redis
// keeps its keys). The delivery ends delivered, but its done mark cannot
// be written: once its lease expires another replica takes it from the
// outbox and delivers it once more, with the same ID, and then no more
// (no storm); the cut-off replica closes at once, its claim's renewal
// stopped.
func TestFleetRedisGoneMidLease(t *testing.T) {
	srv := testenv.StartRedis(t)
	secret := NewSecret()
	held, release := make(chan struct{}), make(chan struct{})
	rc := newReceiver(t, []string{secret}, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			close(held)
			<-release
		}
		w.WriteHeader(http.StatusNoContent)
	})
	sub := subscription(t, "fleet", rc.srv.URL, MaxTimeout, secret)
	front := testenv.StartDelayFront(t, srv.Addr, 0)
	cut := newReplica(t, "redis://:"+srv.Password+"@"+front.Host+"/0", time.Second, sub)
	other := newReplica(t, srv.URL(), time.Second, sub)
	e := ingested("1.0.0")
	cut.d.Emit(context.Background(), e)
	<-held
	front.Cut()
	close(release)
	eventually(t, "the cut-off replica delivered", func() bool { return cut.count("fleet", OutcomeDelivered) == 1 })
	start := time.Now()
	closeNow(t, cut.d)
	cut.store.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the cut-off replica took %s to close", took)
	}
	eventually(t, "the other replica delivered it again", func() bool { return other.count("fleet", OutcomeDelivered) == 1 })
	time.Sleep(3 * time.Second) // three leases: a storm would show
	closeNow(t, other.d)
	deliveredTwice(t, rc, e.ID)
}

// deliveredTwice checks that rc took two verified deliveries, both of
// the event with ID id.
func deliveredTwice(t *testing.T, rc *receiver, id string) {
	t.Helper()
	requests, verified, bad := rc.counts()
	if requests != 2 || verified != 2 || len(bad) > 0 {
		t.Fatalf("%d requests, %d verified, not 2; refused %v", requests, verified, bad)
	}
	if got := rc.idCounts(); got[id] != 2 {
		t.Errorf("not the event's ID in both: %v", got)
	}
}
