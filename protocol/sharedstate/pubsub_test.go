package sharedstate_test

import (
	"context"
	"sync"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// What one Redis store publishes on a channel another hears; after
// Redis restarts the subscriber subscribes again by itself and hears
// what is published then. Publishing while Redis is down is an error,
// promptly.
func TestChannelSurvivesARestart(t *testing.T) {
	srv := testenv.StartRedis(t)
	pub, sub := openRedis(t, srv.URL(), nil), openRedis(t, srv.URL(), nil)
	var mu sync.Mutex
	var heard []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go sub.Channel("test").Subscribe(ctx, func(msg []byte) {
		mu.Lock()
		heard = append(heard, string(msg))
		mu.Unlock()
	})
	has := func(want string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, h := range heard {
				if h == want {
					return true
				}
			}
			return false
		}
	}
	// A message published before the subscription is made is lost: publish until heard.
	eventually(t, "the first message heard", func() bool {
		pub.Channel("test").Publish(ctx, []byte("one"))
		return has("one")()
	})
	srv.Stop()
	if err := pub.Channel("test").Publish(ctx, []byte("lost")); err == nil {
		t.Error("publishing with Redis down succeeded")
	}
	srv.Start(t)
	eventually(t, "a message heard after the restart", func() bool {
		pub.Channel("test").Publish(ctx, []byte("two"))
		return has("two")()
	})
}
