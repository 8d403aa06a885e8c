package sharedstate

import (
	"context"
	"errors"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Channel is a Redis pub/sub channel: what one replica publishes every
// replica subscribed hears (registry notifications' invalidations,
// protocol/notify). Messages are not kept: a replica not subscribed at
// the time misses them.
type Channel struct {
	r    *Redis
	name string
}

// Channel is the channel named name (after the key prefix).
func (r *Redis) Channel(name string) *Channel { return &Channel{r: r, name: r.opts.Prefix + name} }

// Publish sends msg to the channel's subscribers, within OpTimeout and
// through the circuit breaker like every operation.
func (ch *Channel) Publish(ctx context.Context, msg []byte) error {
	if len(msg) > maxRecord {
		return errRecordTooLarge
	}
	return ch.r.do(ctx, "publish", func(ctx context.Context, c redis.Conn) error {
		_, err := redis.DoContext(c, ctx, "PUBLISH", ch.name, msg)
		return err
	})
}

// Subscribe calls fn with each message until ctx ends or the store is
// closed, on a connection of its own (dialled like the others, its
// replies bounded the same way), pinged every subscribePing; a lost
// connection is dialled again after a pause that grows to
// maxResubscribe.
func (ch *Channel) Subscribe(ctx context.Context, fn func(msg []byte)) {
	wait := time.Second
	for {
		if ch.subscribeOnce(ctx, fn) {
			wait = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-ch.r.closed:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, maxResubscribe)
	}
}

const (
	subscribePing  = 10 * time.Second
	maxResubscribe = 30 * time.Second
)

// subscribeOnce listens on one connection until it fails or ctx ends;
// it reports whether the subscription was made.
func (ch *Channel) subscribeOnce(ctx context.Context, fn func(msg []byte)) bool {
	c, err := ch.r.pool.DialContext(ctx)
	if err != nil {
		ch.r.opts.Logger.Warn("shared cache: could not subscribe to a channel", "channel", ch.name, "error", err.Error())
		return false
	}
	psc := redis.PubSubConn{Conn: c}
	defer psc.Close()
	if err := psc.Subscribe(ch.name); err != nil {
		return false
	}
	stop, pinged := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-pinged }() // before psc.Close: one writer at a time
	go func() {                              // pings keep the connection known alive; ending ctx closes it
		defer close(pinged)
		t := time.NewTicker(subscribePing)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				c.Close()
				return
			case <-ch.r.closed:
				c.Close()
				return
			case <-t.C:
				psc.Ping("")
			}
		}
	}()
	subscribed := false
	for {
		switch v := psc.ReceiveWithTimeout(3 * subscribePing).(type) {
		case redis.Message:
			fn(v.Data)
		case redis.Subscription:
			subscribed = true
		case error:
			if ctx.Err() == nil {
				ch.r.opts.Logger.Warn("shared cache: a channel's subscription was lost; subscribing again", "channel", ch.name, "error", v.Error())
			}
			return subscribed
		}
	}
}

var errRecordTooLarge = errors.New("shared state: record too large")
