package sharedstate

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// redisTarget is where a Redis store connects and how it logs in, read
// from its URL (the rules of redigo's DialURL, which this replaces so
// that every connection goes through the reply bounds, TLS included).
type redisTarget struct {
	address            string // host:port
	host               string // for TLS's server name
	username, password string
	db                 int
	tls                bool
	tlsConfig          *tls.Config
}

// parseRedisTarget reads redis://[user[:pass]@]host[:port][/db] or
// rediss://… (port 6379 by default); password, when given, is the
// password instead of one in the URL (which must then carry none). A
// user without a password in the URL is the password, as redis-cli reads
// it, unless password is given.
func parseRedisTarget(raw, password string) (redisTarget, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" || u.Opaque != "" {
		return redisTarget{}, fmt.Errorf("the shared cache must be a redis://[user:pass@]host:port[/db] or rediss://… URL, not %q", RedactURL(raw))
	}
	t := redisTarget{host: u.Hostname(), tls: u.Scheme == "rediss", password: password}
	port := u.Port()
	if port == "" {
		port = "6379"
	}
	t.address = net.JoinHostPort(t.host, port)
	if t.db, err = redisDatabase(u.Path); err != nil {
		return redisTarget{}, err
	}
	if u.User == nil {
		return t, nil
	}
	urlPassword, hasPassword := u.User.Password()
	switch {
	case hasPassword && password != "":
		return redisTarget{}, fmt.Errorf("the shared cache URL %s carries a password and another was given (OCI_TOFU_SHARED_CACHE_PASSWORD): give one", RedactURL(raw))
	case hasPassword:
		t.username, t.password = u.User.Username(), urlPassword
	case password != "":
		t.username = u.User.Username()
	default:
		t.password = u.User.Username()
	}
	return t, nil
}

// redisDatabase reads a URL's path: "", "/" or "/N".
func redisDatabase(path string) (int, error) {
	p := strings.TrimPrefix(path, "/")
	if p == "" {
		return 0, nil
	}
	db, err := strconv.Atoi(p)
	if err != nil || db < 0 {
		return 0, fmt.Errorf("the shared cache URL's database %q is not a number", p)
	}
	return db, nil
}

// dialGuarded connects (TLS for rediss://, verified) and puts the reply
// bounds (respGuard) under redigo, on the plain bytes of the replies.
func (t redisTarget) dialGuarded(connectTimeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: connectTimeout, KeepAlive: 5 * time.Minute}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if t.tlsConfig != nil {
			tc := tls.Client(c, t.tlsConfig)
			if err := tc.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, err
			}
			c = tc
		}
		return &respGuard{Conn: c}, nil
	}
}
