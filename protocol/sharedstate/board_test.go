package sharedstate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// Members publish on a board and each gathers everyone's records; a
// member that stops publishing drops off after the lifetime; the board
// answers at most MaxBoardMembers members (the newest), and a record
// written into Redis past the size bound is left out.
func TestBoardGathersEveryMembersRecordWithinBounds(t *testing.T) {
	srv := testenv.StartRedis(t)
	a, b := openRedis(t, srv.URL(), nil), openRedis(t, srv.URL(), nil)
	ctx := context.Background()
	if err := a.Publish(ctx, "seen", "replica-a", []byte("from a"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, "seen", "replica-b", []byte("from b"), time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := a.Gather(ctx, "seen", time.Minute)
	if err != nil || len(got) != 2 || string(got["replica-a"]) != "from a" || string(got["replica-b"]) != "from b" {
		t.Fatalf("gathered %q, %v", got, err)
	}
	// b's last record is short-lived and b stops publishing: its record
	// expires, a's (published again) stays.
	if err := b.Publish(ctx, "seen", "replica-b", []byte("from b"), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, "seen", "replica-a", []byte("from a"), time.Minute); err != nil {
		t.Fatal(err)
	}
	eventually(t, "replica-b's record expiring", func() bool {
		got, err := a.Gather(ctx, "seen", time.Minute)
		_, present := got["replica-b"]
		return err == nil && !present && len(got) == 1
	})
	// Many members: the board keeps the newest MaxBoardMembers.
	for i := range sharedstate.MaxBoardMembers + 10 {
		if err := b.Publish(ctx, "many", fmt.Sprintf("m%02d", i), []byte("x"), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	got, err = a.Gather(ctx, "many", time.Minute)
	if err != nil || len(got) != sharedstate.MaxBoardMembers || got["m00"] != nil || got[fmt.Sprintf("m%02d", sharedstate.MaxBoardMembers+9)] == nil {
		t.Fatalf("%d members gathered (%v), want the newest %d", len(got), err, sharedstate.MaxBoardMembers)
	}
	raw, err := redis.DialURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	zcard, _ := redis.Int(raw.Do("ZCARD", "oci-tofu:board:many"))
	if zcard != sharedstate.MaxBoardMembers {
		t.Errorf("the board's member set holds %d members, want %d", zcard, sharedstate.MaxBoardMembers)
	}
	// A record someone else wrote past the bound is not read.
	if _, err := raw.Do("SET", "oci-tofu:board:seen:replica-a", strings.Repeat("x", 65<<10)); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Gather(ctx, "seen", time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("an oversized record was gathered: %d records, %v", len(got), err)
	}
	if err := a.Publish(ctx, "seen", strings.Repeat("n", 65), []byte("x"), time.Minute); err == nil {
		t.Error("a member name longer than the bound was published")
	}
	if ttl, _ := redis.Int64(raw.Do("PTTL", "oci-tofu:board:seen")); ttl <= 0 || ttl > 60000 {
		t.Errorf("the board's member set has PTTL %d, want it to expire within the lifetime", ttl)
	}
}

// With Redis down, board operations fail fast (the breaker) and count.
func TestBoardWithRedisDown(t *testing.T) {
	srv := testenv.StartRedis(t)
	a := openRedis(t, srv.URL(), nil)
	srv.Stop()
	ctx := context.Background()
	for range 5 {
		if err := a.Publish(ctx, "seen", "a", []byte("x"), time.Minute); err == nil {
			t.Fatal("published with Redis down")
		}
		if _, err := a.Gather(ctx, "seen", time.Minute); err == nil {
			t.Fatal("gathered with Redis down")
		}
	}
}
