package sharedstate_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

func openRedis(t *testing.T, url string, log *bytes.Buffer) *sharedstate.Redis {
	t.Helper()
	if log == nil {
		log = &bytes.Buffer{}
	}
	r, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: url, BreakerOpen: 300 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
	}
}

func TestRedisLeaseIsExclusiveAndRenewed(t *testing.T) {
	srv := testenv.StartRedis(t)
	a, b := openRedis(t, srv.URL(), nil), openRedis(t, srv.URL(), nil)
	ctx := context.Background()
	la, err := a.Lease(ctx, "pull k", 300*time.Millisecond)
	if err != nil || la == nil {
		t.Fatalf("first lease: %v %v", la, err)
	}
	// Held past three TTLs: the holder renews it.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if lb, err := b.Lease(ctx, "pull k", time.Minute); err != nil || lb != nil {
			t.Fatalf("a second holder got the lease (%v, %v)", lb, err)
		}
	}
	la.Release()
	lb, err := b.Lease(ctx, "pull k", time.Minute)
	if err != nil || lb == nil {
		t.Fatalf("after release: %v %v", lb, err)
	}
	lb.Release()
}

// A holder that dies (its connection gone, no release) loses the lease
// when it expires; its late Release does not delete the next holder's.
func TestRedisLeaseExpiresAndReleaseComparesToken(t *testing.T) {
	srv := testenv.StartRedis(t)
	a, b := openRedis(t, srv.URL(), nil), openRedis(t, srv.URL(), nil)
	ctx := context.Background()
	la, err := a.Lease(ctx, "pull dead", 400*time.Millisecond)
	if err != nil || la == nil {
		t.Fatalf("lease: %v %v", la, err)
	}
	a.Close() // the holder dies: renewals stop, nothing is released
	var lb sharedstate.Lease
	eventually(t, "the dead holder's lease expires", func() bool {
		lb, err = b.Lease(ctx, "pull dead", time.Minute)
		return lb != nil
	})
	lb.Release()
}

// A release or renewal by a holder whose lease expired and was taken by
// another touches nothing: compare-and-delete, compare-and-expire.
func TestRedisReleaseComparesToken(t *testing.T) {
	srv := testenv.StartRedis(t)
	a, b, c := openRedis(t, srv.URL(), nil), openRedis(t, srv.URL(), nil), openRedis(t, srv.URL(), nil)
	ctx := context.Background()
	la, err := a.Lease(ctx, "pull k", 3*time.Second)
	if err != nil || la == nil {
		t.Fatalf("lease: %v %v", la, err)
	}
	raw, err := redis.DialURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Do("DEL", "oci-tofu:pull k"); err != nil { // as if it expired
		t.Fatal(err)
	}
	lb, err := b.Lease(ctx, "pull k", time.Minute)
	if err != nil || lb == nil {
		t.Fatalf("b after expiry: %v %v", lb, err)
	}
	time.Sleep(1100 * time.Millisecond) // a's renewal runs, and must find the lease not its own
	la.Release()
	if ms, _ := redis.Int64(raw.Do("PTTL", "oci-tofu:pull k")); time.Duration(ms)*time.Millisecond < 50*time.Second {
		ttl := time.Duration(ms) * time.Millisecond
		t.Fatalf("b's lease was renewed or released by a: ttl %v", ttl)
	}
	if lc, err := c.Lease(ctx, "pull k", time.Minute); err != nil || lc != nil {
		t.Fatalf("a stale holder's release deleted the live lease (%v, %v)", lc, err)
	}
	lb.Release()
	if lc, err := c.Lease(ctx, "pull k", time.Minute); err != nil || lc == nil {
		t.Fatalf("after the holder's release: %v %v", lc, err)
	}
}

func TestRedisRecords(t *testing.T) {
	srv := testenv.StartRedis(t)
	a, b := openRedis(t, srv.URL(), nil), openRedis(t, srv.URL(), nil)
	ctx := context.Background()
	if _, ok, err := b.Get(ctx, "done x"); ok || err != nil {
		t.Fatalf("empty store: %v %v", ok, err)
	}
	if err := a.Put(ctx, "done x", []byte(`{"a":1}`), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := b.Get(ctx, "done x"); !ok || err != nil || string(v) != `{"a":1}` {
		t.Fatalf("another client reads %q %v %v", v, ok, err)
	}
	eventually(t, "the record expires", func() bool { _, ok, _ := b.Get(ctx, "done x"); return !ok })
	if err := a.Put(ctx, "big", make([]byte, 1<<20), time.Second); err == nil {
		t.Fatal("a 1 MiB record was written")
	}
}

// With Redis stopped every operation fails fast with ErrUnavailable, the
// breaker opens, the metrics and one log line say so (never the
// password); once Redis is back the store answers again.
func TestRedisDownBreaker(t *testing.T) {
	srv := testenv.StartRedis(t)
	var log bytes.Buffer
	s := openRedis(t, srv.URL(), &log)
	ctx := context.Background()
	if err := s.Put(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	for range 20 {
		if _, _, err := s.Get(ctx, "k"); !errors.Is(err, sharedstate.ErrUnavailable) {
			t.Fatalf("get with redis down: %v", err)
		}
		if l, err := s.Lease(ctx, "l", time.Second); l != nil || !errors.Is(err, sharedstate.ErrUnavailable) {
			t.Fatalf("lease with redis down: %v %v", l, err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s)
	if got := testutil.ToFloat64(gauge(t, reg, "oci_tofu_shared_cache_up")); got != 0 {
		t.Fatalf("up = %v with redis down", got)
	}
	if n := strings.Count(log.String(), "shared cache unavailable"); n != 1 {
		t.Fatalf("%d log lines for 40 failures (want 1, rate-limited):\n%s", n, log.String())
	}
	if strings.Contains(log.String(), srv.Password) || !strings.Contains(log.String(), "xxxxx") {
		t.Fatalf("the log shows the password, or no redacted URL:\n%s", log.String())
	}
	srv.Start(t)
	eventually(t, "the store answers again", func() bool { _, ok, err := s.Get(ctx, "k"); return err == nil && !ok })
	if got := testutil.ToFloat64(gauge(t, reg, "oci_tofu_shared_cache_up")); got != 1 {
		t.Fatalf("up = %v with redis back", got)
	}
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	return collectorFunc(func(ch chan<- prometheus.Metric) {
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == name {
				ch <- prometheus.MustNewConstMetric(prometheus.NewDesc(name, "", nil, nil), prometheus.GaugeValue, mf.GetMetric()[0].GetGauge().GetValue())
			}
		}
	})
}

type collectorFunc func(ch chan<- prometheus.Metric)

func (f collectorFunc) Describe(chan<- *prometheus.Desc)    {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

func TestOpenRedisRefusesOtherURLsWithoutThePassword(t *testing.T) {
	for _, u := range []string{"http://:sekrit@h:1", "redis://", "sekrit"} {
		_, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: u})
		if err == nil || strings.Contains(err.Error(), "sekrit") && strings.Contains(u, ":sekrit@") {
			t.Errorf("%q: %v", u, err)
		}
	}
	if got := sharedstate.RedactURL("rediss://u:sekrit@h:6380/2"); strings.Contains(got, "sekrit") {
		t.Errorf("redacted: %s", got)
	}
}

func TestLocal(t *testing.T) {
	s := sharedstate.NewLocal()
	ctx := context.Background()
	l, _ := s.Lease(ctx, "k", time.Second)
	if l == nil {
		t.Fatal("no lease")
	}
	if l2, _ := s.Lease(ctx, "k", time.Second); l2 != nil {
		t.Fatal("two holders")
	}
	l.Release()
	if l2, _ := s.Lease(ctx, "k", time.Second); l2 == nil {
		t.Fatal("not released")
	}
	s.Put(ctx, "r", []byte("v"), 50*time.Millisecond)
	if v, ok, _ := s.Get(ctx, "r"); !ok || string(v) != "v" {
		t.Fatal("record not kept")
	}
	eventually(t, "the record expires", func() bool { _, ok, _ := s.Get(ctx, "r"); return !ok })
	if s.Shared() {
		t.Fatal("Local claims to be shared")
	}
}

// Callers that give up (a client hanging up while it waits) are not the
// store's failures: they neither open the breaker nor log.
func TestRedisCallerCancellationIsNotAFailure(t *testing.T) {
	srv := testenv.StartRedis(t)
	var log bytes.Buffer
	s := openRedis(t, srv.URL(), &log)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 10 {
		if _, _, err := s.Get(ctx, "k"); !errors.Is(err, context.Canceled) {
			t.Fatalf("get with a canceled context: %v", err)
		}
	}
	if err := s.Put(context.Background(), "k", []byte("v"), time.Minute); err != nil {
		t.Fatalf("the store refuses after callers gave up: %v", err)
	}
	if log.Len() != 0 {
		t.Errorf("logged:\n%s", log.String())
	}
}

// A URL naming the password as its user alone (redis://PASSWORD@host,
// which redis-cli and OpenRedis read as the password) is as redacted as
// one with user:password: Redis stopped, the log names no password;
// RedactURL hides it.
func TestRedisPasswordAsUserRedacted(t *testing.T) {
	srv := testenv.StartRedis(t)
	var log bytes.Buffer
	s := openRedis(t, "redis://"+srv.Password+"@"+srv.Addr+"/0", &log)
	ctx := context.Background()
	if err := s.Put(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatalf("the password as the URL's user does not authenticate: %v", err)
	}
	srv.Stop()
	if _, _, err := s.Get(ctx, "k"); !errors.Is(err, sharedstate.ErrUnavailable) || strings.Contains(err.Error(), srv.Password) {
		t.Fatalf("get with redis down: %v", err)
	}
	if !strings.Contains(log.String(), "shared cache unavailable") || strings.Contains(log.String(), srv.Password) {
		t.Fatalf("the log shows the password, or nothing:\n%s", log.String())
	}
	for _, u := range []string{"redis://" + srv.Password + "@h:6379", "rediss://" + srv.Password + "@h/1", "redis://u:" + srv.Password + "@h"} {
		if got := sharedstate.RedactURL(u); strings.Contains(got, srv.Password) || !strings.Contains(got, "xxxxx") {
			t.Errorf("RedactURL(%q) = %q", u, got)
		}
	}
}
