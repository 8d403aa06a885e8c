package sharedstate

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/prometheus/client_golang/prometheus"
)

// RedisOptions configure a Redis store.
type RedisOptions struct {
	// URL is redis://[user[:pass]@]host:port[/db] or rediss://… (TLS).
	URL string
	// Password, when set, authenticates (as the URL's user, if it names
	// one) instead of a password in the URL, which then must carry none:
	// serve reads it from the environment (OCI_TOFU_SHARED_CACHE_PASSWORD), not
	// from a command line, which every local user can read (ps).
	Password string
	// TLS is the client TLS configuration for rediss:// (its RootCAs the
	// operator's CA file); nil: system trust.
	TLS *tls.Config
	// OpTimeout bounds each operation (default DefaultOpTimeout).
	OpTimeout time.Duration
	// Prefix begins every key (default "oci-tofu:").
	Prefix string
	// BreakerFailures consecutive failures open the circuit breaker for
	// BreakerOpen (defaults 3 and 5s); then one operation is tried again.
	BreakerFailures int
	BreakerOpen     time.Duration
	Logger          *slog.Logger
}

// Redis is the Store on a Redis server (or anything speaking its
// protocol), through redigo (a small client: go-redis's typed command set
// cost the binary 8 MB): leases are SET NX PX with a random token, renewed
// by a compare-and-expire script and released by a compare-and-delete
// script; records are plain keys with an expiry.
type Redis struct {
	pool   *redis.Pool
	opts   RedisOptions
	health *health
	wg     sync.WaitGroup
	closed chan struct{}
	once   sync.Once
	// oversized logs the records Get ignores for their size, now and then.
	oversized rateLimitedLog
}

// renewScript extends a lease only while it is still the holder's.
var renewScript = redis.NewScript(1, `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)

// releaseScript deletes a lease only while it is still the holder's.
var releaseScript = redis.NewScript(1, `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// OpenRedis makes a Redis store from a redis:// or rediss:// URL. It does
// not connect yet: a Redis that is down at start-up is the same as one
// that goes down later.
func OpenRedis(o RedisOptions) (*Redis, error) {
	t, err := parseRedisTarget(o.URL, o.Password)
	if err != nil {
		return nil, err
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = DefaultOpTimeout
	}
	if o.Prefix == "" {
		o.Prefix = "oci-tofu:"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if t.tls {
		t.tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		if o.TLS != nil {
			t.tlsConfig = o.TLS.Clone()
		}
		t.tlsConfig.ServerName = t.host
	}
	dial := []redis.DialOption{
		redis.DialReadTimeout(o.OpTimeout), redis.DialWriteTimeout(o.OpTimeout),
		redis.DialContextFunc(t.dialGuarded(o.OpTimeout * 5)),
		redis.DialDatabase(t.db), redis.DialUsername(t.username), redis.DialPassword(t.password),
	}
	pool := &redis.Pool{
		MaxIdle: 16, IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			c, err := redis.DialContext(ctx, "tcp", t.address, dial...)
			if err != nil {
				return nil, errors.New(redact(err.Error(), t.password))
			}
			return c, nil
		},
	}
	r := &Redis{pool: pool, opts: o, closed: make(chan struct{})}
	r.health = newHealth(o.BreakerFailures, o.BreakerOpen, o.Logger, RedactURL(o.URL))
	return r, nil
}

// Shared is true: every replica on the same Redis sees this state.
func (r *Redis) Shared() bool { return true }

// Close stops the lease renewals and the connections.
func (r *Redis) Close() error {
	r.once.Do(func() { close(r.closed) })
	err := r.pool.Close()
	r.wg.Wait()
	return err
}

// DefaultOpTimeout bounds one Redis operation unless told otherwise: a
// Redis beside the replicas answers in well under a millisecond, and a
// replica waiting longer than this goes on alone (serve
// --shared-cache-timeout).
const DefaultOpTimeout = 100 * time.Millisecond

// do runs one operation within OpTimeout, through the circuit breaker.
func (r *Redis) do(ctx context.Context, op string, fn func(ctx context.Context, c redis.Conn) error) error {
	if err := ctx.Err(); err != nil {
		return err // the caller gave up: not the store's failure
	}
	if !r.health.allow() {
		r.health.failed(op, ErrUnavailable)
		return ErrUnavailable
	}
	opCtx, cancel := context.WithTimeout(ctx, r.opts.OpTimeout)
	defer cancel()
	err := r.with(opCtx, fn)
	if isDataError(err) {
		r.health.ok() // Redis answered: it is up, the key is not what it should be
		return err
	}
	if err != nil && !errors.Is(err, redis.ErrNil) {
		if ctx.Err() != nil {
			r.health.release()
			return ctx.Err()
		}
		r.health.failed(op, err)
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	r.health.ok()
	return err
}

// isDataError is whether err is Redis refusing an operation for a key's
// content (WRONGTYPE: a key of another type where ours should be, left
// or planted by another writer), not for its own state: it answered,
// and such an error says nothing of its health (the circuit breaker
// does not count it), only that one operation cannot be done.
func isDataError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(string(re), "WRONGTYPE")
}

// with runs fn on a pooled connection.
func (r *Redis) with(ctx context.Context, fn func(ctx context.Context, c redis.Conn) error) error {
	c, err := r.pool.GetContext(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(ctx, c)
}

// Put records val under key for ttl.
func (r *Redis) Put(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	if len(val) > maxRecord {
		return errors.New("shared state: record too large")
	}
	return r.do(ctx, "put", func(ctx context.Context, c redis.Conn) error {
		_, err := redis.DoContext(c, ctx, "SET", r.opts.Prefix+key, val, "PX", ttl.Milliseconds())
		return err
	})
}

// getScript reads a record only when it is within the bound ARGV[1]:
// -1 for a larger one (its bytes never leave Redis), nil when there is
// none. KEYS: the record.
var getScript = redis.NewScript(1, `
if redis.call("strlen", KEYS[1]) > tonumber(ARGV[1]) then return -1 end
return redis.call("get", KEYS[1])`)

// Get reads the record under key. A record larger than maxRecord is
// refused in Redis, before any of it is sent (it is ignored, and logged
// now and then); the connection refuses any larger reply too (resp.go).
func (r *Redis) Get(ctx context.Context, key string) ([]byte, bool, error) {
	var reply any
	err := r.do(ctx, "get", func(ctx context.Context, c redis.Conn) error {
		var err error
		reply, err = getScript.DoContext(ctx, c, r.opts.Prefix+key, maxRecord)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	switch v := reply.(type) {
	case []byte:
		return v, true, nil
	case int64:
		r.oversized.warn(r.opts.Logger, "shared cache: ignoring a record larger than the bound (written by someone else: replicas write none)",
			slog.String("key", r.opts.Prefix+key), slog.Int("bound_bytes", maxRecord))
	}
	return nil, false, nil
}

// Lease takes key with SET NX PX and a random token, and renews it every
// third of ttl until released or lost.
func (r *Redis) Lease(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	tok := make([]byte, 16)
	rand.Read(tok)
	l := &redisLease{r: r, key: r.opts.Prefix + key, token: hex.EncodeToString(tok), ttl: ttl, stop: make(chan struct{})}
	var took bool
	err := r.do(ctx, "lease", func(ctx context.Context, c redis.Conn) error {
		reply, err := redis.DoContext(c, ctx, "SET", l.key, l.token, "NX", "PX", ttl.Milliseconds())
		took = reply != nil // "OK", or nil when the key is held
		return err
	})
	if err != nil || !took {
		return nil, err
	}
	r.wg.Add(1)
	go l.renew()
	return l, nil
}

// redisLease is a lease held on Redis.
type redisLease struct {
	r     *Redis
	key   string
	token string
	ttl   time.Duration
	once  sync.Once
	stop  chan struct{}
}

// renew extends the lease every ttl/3 until released, or until it is
// found lost (expired and maybe taken by another: the pull carries on,
// its tag written last as always).
func (l *redisLease) renew() {
	defer l.r.wg.Done()
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-l.r.closed:
			return
		case <-t.C:
		}
		var n int64
		err := l.r.do(context.Background(), "renew", func(ctx context.Context, c redis.Conn) error {
			var err error
			n, err = redis.Int64(renewScript.DoContext(ctx, c, l.key, l.token, l.ttl.Milliseconds()))
			return err
		})
		if err == nil && n == 0 {
			l.r.opts.Logger.Warn("shared cache: a pull's lease was lost (it expired); the pull carries on")
			return
		}
	}
}

// Release stops renewing and deletes the lease if it is still ours.
func (l *redisLease) Release() {
	l.once.Do(func() {
		close(l.stop)
		l.r.do(context.Background(), "release", func(ctx context.Context, c redis.Conn) error {
			_, err := releaseScript.DoContext(ctx, c, l.key, l.token)
			return err
		})
	})
}

// RedactURL is a shared cache URL fit for logs: its password replaced,
// and so a user alone, which OpenRedis reads as the password
// (redis://PASSWORD@host, as redis-cli does).
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(an unparsable URL)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); !ok {
			u.User = url.User("xxxxx")
		}
	}
	return u.Redacted()
}

// redact is msg without the password.
func redact(msg, password string) string {
	if password == "" {
		return msg
	}
	return replaceAll(msg, password, "xxxxx")
}

// Describe and Collect are the store's metrics
// (oci_tofu_shared_cache_errors_total, oci_tofu_shared_cache_up).
func (r *Redis) Describe(ch chan<- *prometheus.Desc) { r.health.Describe(ch) }

// Collect: see Describe.
func (r *Redis) Collect(ch chan<- prometheus.Metric) { r.health.Collect(ch) }
