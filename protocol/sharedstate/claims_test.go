package sharedstate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// rawConn is a connection to srv for looking at the keys themselves.
func rawConn(t *testing.T, srv *testenv.Redis) redis.Conn {
	t.Helper()
	c, err := redis.Dial("tcp", srv.Addr, redis.DialPassword(srv.Password))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// openStore is a store on srv whose operations may take 5 s: a loaded
// machine (-race) must not fail an operation these tests assert on.
func openStore(t *testing.T, srv *testenv.Redis) *sharedstate.Redis {
	t.Helper()
	r, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: srv.URL(), OpTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestClaimsTakeHeldDone: one holder at a time; done is remembered;
// every key is prefixed and expires.
func TestClaimsTakeHeldDone(t *testing.T) {
	srv := testenv.StartRedis(t)
	a := openStore(t, srv).Claims("events", sharedstate.ClaimOptions{Lease: time.Minute, Memory: time.Hour})
	b := openStore(t, srv).Claims("events", sharedstate.ClaimOptions{Lease: time.Minute})
	ctx := context.Background()
	h, state, err := a.Take(ctx, "sub", "e1", []byte("entry"))
	if err != nil || state != sharedstate.ClaimTaken || h == nil {
		t.Fatalf("first take: %v %v %v", h, state, err)
	}
	if _, state, err := b.Take(ctx, "sub", "e1", nil); err != nil || state != sharedstate.ClaimHeld {
		t.Fatalf("while held: %v %v", state, err)
	}
	if _, state, _ := b.Take(ctx, "other", "e1", nil); state != sharedstate.ClaimTaken {
		t.Errorf("another scope's claim: %v", state)
	}
	h.Done(ctx)
	if _, state, err := b.Take(ctx, "sub", "e1", nil); err != nil || state != sharedstate.ClaimDone {
		t.Fatalf("after done: %v %v", state, err)
	}
	c := rawConn(t, srv)
	keys, err := redis.Strings(c.Do("KEYS", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "oci-tofu:events:") {
			t.Errorf("key %q not under the prefix", k)
		}
		if ttl, _ := redis.Int64(c.Do("PTTL", k)); ttl <= 0 {
			t.Errorf("key %q does not expire (%d)", k, ttl)
		}
	}
	if ttl, _ := redis.Int64(c.Do("PTTL", "oci-tofu:events:claim:sub:e1")); ttl > time.Hour.Milliseconds() {
		t.Errorf("done remembered for %d ms, more than Memory", ttl)
	}
	if n, _ := redis.Int(c.Do("EXISTS", "oci-tofu:events:entry:sub:e1")); n != 0 {
		t.Error("a done claim's entry is kept")
	}
}

// TestClaimsKeysAreBounded: an ID that is not a plain key part is
// hashed; the outbox holds at most MaxEntries; an oversized entry is not
// kept.
func TestClaimsKeysAreBounded(t *testing.T) {
	srv := testenv.StartRedis(t)
	cl := openStore(t, srv).Claims("events", sharedstate.ClaimOptions{Lease: time.Minute, MaxEntries: 5})
	ctx := context.Background()
	for i := range 20 {
		if _, state, err := cl.Take(ctx, "sub", "e"+strings.Repeat("x", i), []byte("entry")); err != nil || state != sharedstate.ClaimTaken {
			t.Fatalf("take %d: %v %v", i, state, err)
		}
	}
	weird := "a:b/" + strings.Repeat("z", 500)
	if _, _, err := cl.Take(ctx, "sub", weird, make([]byte, sharedstate.MaxClaimEntry+1)); err != nil {
		t.Fatal(err)
	}
	c := rawConn(t, srv)
	if n, _ := redis.Int(c.Do("ZCARD", "oci-tofu:events:outbox:sub")); n != 5 {
		t.Errorf("the outbox holds %d, not 5", n)
	}
	entries, _ := redis.Strings(c.Do("KEYS", "oci-tofu:events:entry:*"))
	if len(entries) != 5 {
		t.Errorf("%d entries kept, not 5", len(entries))
	}
	keys, _ := redis.Strings(c.Do("KEYS", "*"))
	for _, k := range keys {
		if len(k) > 120 || strings.Contains(k, "/") {
			t.Errorf("key %q: an ID not hashed", k)
		}
	}
}

// TestClaimsRecover: a holder that stops renewing (killed) leaves its
// entry to be recovered after the lease, by one caller; one that
// abandons it, at once; one that renews, never.
func TestClaimsRecover(t *testing.T) {
	srv := testenv.StartRedis(t)
	const lease = 300 * time.Millisecond
	killed := openStore(t, srv)
	live := openStore(t, srv).Claims("events", sharedstate.ClaimOptions{Lease: 3 * lease})
	other := openStore(t, srv).Claims("events", sharedstate.ClaimOptions{Lease: lease})
	ctx := context.Background()
	if _, _, err := killed.Claims("events", sharedstate.ClaimOptions{Lease: lease}).Take(ctx, "sub", "dead", []byte("dead entry")); err != nil {
		t.Fatal(err)
	}
	renewed, _, err := live.Take(ctx, "sub", "alive", []byte("live entry"))
	if err != nil || renewed == nil {
		t.Fatal(err)
	}
	defer renewed.Done(ctx)
	killed.Close()
	var got [][]byte
	eventually(t, "the killed holder's entry recovered", func() bool {
		got, err = other.Recover(ctx, "sub", 10)
		return err == nil && len(got) > 0
	})
	if len(got) != 1 || string(got[0]) != "dead entry" {
		t.Fatalf("recovered %q", got)
	}
	// Given to one caller for a lease: asked again at once, none.
	if again, err := live.Recover(ctx, "sub", 10); err != nil || len(again) != 0 {
		t.Errorf("recovered twice within a lease: %q %v", again, err)
	}
	// Taken over and abandoned: recovered at once.
	h, state, err := other.Take(ctx, "sub", "dead", []byte("dead entry"))
	if err != nil || state != sharedstate.ClaimTaken {
		t.Fatalf("taking over: %v %v", state, err)
	}
	h.Abandon(ctx)
	if got, err := live.Recover(ctx, "sub", 10); err != nil || len(got) != 1 {
		t.Errorf("an abandoned claim's entry: %q %v", got, err)
	}
	// The renewed one is never handed out, past several leases.
	for end := time.Now().Add(9 * lease); time.Now().Before(end); time.Sleep(lease / 4) {
		got, err := other.Recover(ctx, "sub", 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			if string(e) == "live entry" {
				t.Fatal("a renewed claim's entry was recovered")
			}
		}
	}
}
