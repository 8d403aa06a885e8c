package proxy

import (
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// Two replicas on one Redis: Distribution notifies one, and the other
// lists the pushed version within 2 s too (the batch goes out on a Redis
// channel). With Redis down, the notified replica still shows pushes;
// only the other waits out --tag-ttl.
func TestNotificationsReachTheFleet(t *testing.T) {
	srv := testenv.StartRedis(t)
	open := func() sharedstate.Store {
		shared, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: srv.URL(), BreakerOpen: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { shared.Close() })
		return shared
	}
	var a, b *proxy
	reg := testenv.StartRegistryNotifying(t, func(r *testenv.Registry) testenv.Notifying {
		var u string
		a, u = notifiedProxy(t, r, open())
		b, _ = notifiedProxy(t, r, open())
		return testenv.Notifying{URL: u, Authorization: "Bearer " + notifySecret}
	})
	waitSubscribers(t, srv, 2)
	repo := registryRepo(t, reg, "p/test/hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	waitListed(t, a, "1.0.0")
	waitListed(t, b, "1.0.0")

	push(t, repo, releaseArtifact(t, "1.1.0"), "1.1.0")
	waitListed(t, b, "1.1.0") // told by a
	waitListed(t, a, "1.1.0")
	if n := b.notifications.receiver.Batches(); n == 0 {
		t.Fatal("b applied no batch: it did not hear a")
	}

	srv.Stop()
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.2.0")
	waitListed(t, a, "1.2.0") // b is not told: it waits out --tag-ttl
}

// waitSubscribers waits (up to 10 s) until n replicas listen on the
// notifications channel.
func waitSubscribers(t *testing.T, srv *testenv.Redis, n int64) {
	t.Helper()
	c, err := redis.DialURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		reply, err := redis.Values(c.Do("PUBSUB", "NUMSUB", "oci-tofu:"+notifyChannel))
		if err != nil {
			t.Fatal(err)
		}
		if len(reply) == 2 {
			if got, _ := redis.Int64(reply[1], nil); got >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d replicas subscribed: %v", n, reply)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
