package origin

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// ErrRefused marks a request a Client refused to make, before any
// connection: a URL (a download location, a redirect) that is not https,
// carries credentials, or names a host outside the client's allow-list
// (Restrict).
var ErrRefused = errors.New("refused")

// Hosts is the set of hosts a Client may contact, as host:port in lower
// case (port 443 when not written).
type Hosts map[string]bool

// NewHosts reads HOST or HOST:PORT entries; an https URL gives its host.
func NewHosts(hosts ...string) (Hosts, error) {
	h := Hosts{}
	for _, s := range hosts {
		k, err := CanonicalHost(s)
		if err != nil {
			return nil, err
		}
		h[k] = true
	}
	return h, nil
}

// CanonicalHost is host:port in lower case, port 443 when absent (the
// form allow-lists compare).
func CanonicalHost(h string) (string, error) {
	h = strings.ToLower(strings.TrimSpace(h))
	if h == "" || strings.ContainsAny(h, "/@?#") {
		return "", fmt.Errorf("%q is not a HOST or HOST:PORT", h)
	}
	if _, _, err := net.SplitHostPort(h); err != nil {
		h = net.JoinHostPort(strings.Trim(h, "[]"), "443")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil || host == "" || port == "" {
		return "", fmt.Errorf("%q is not a HOST or HOST:PORT", h)
	}
	return net.JoinHostPort(host, port), nil
}

// allows says whether u is an https URL without credentials on one of
// the hosts (any host when h is nil).
func (h Hosts) allows(u *url.URL) bool {
	if u == nil || u.Scheme != "https" || u.User != nil || u.Host == "" {
		return false
	}
	if h == nil {
		return true
	}
	k, err := CanonicalHost(u.Host)
	return err == nil && h[k]
}

// check refuses u unless allowed, naming it without its query (which may
// carry a signature or a token).
func (h Hosts) check(u *url.URL) error {
	if h.allows(u) {
		return nil
	}
	if h == nil {
		return fmt.Errorf("%w: %s: origins are reached over https only", ErrRefused, RedactURL(u))
	}
	return fmt.Errorf("%w: %s: not an https URL on an allowed host (the origins' own, and the download hosts allowed besides)", ErrRefused, RedactURL(u))
}

// RedactURL is u without credentials, query or fragment (which may carry
// signatures or tokens), for messages and logs.
func RedactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User, c.RawQuery, c.Fragment = nil, "", ""
	return c.String()
}

// Restrict makes the client contact only hosts (https only, as always):
// every request it makes, and every redirect it follows, is checked
// before it connects. pull-through restricts its client to the origins'
// hosts and the download hosts allowed besides; without Restrict any
// https host may be contacted (`mirror`, which names its origins on the
// command line).
func (c *Client) Restrict(hosts Hosts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.allow = hosts
}

// guarded is the HTTP client one request goes through: c.HTTP (its
// timeout and redirect policy) with guard under it.
func (c *Client) guarded(credentialHost string) *http.Client {
	c.mu.Lock()
	allow := c.allow
	c.mu.Unlock()
	hc := *c.HTTP
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	g := &guard{next: next, allow: allow}
	if c.Token != nil && credentialHost != "" {
		g.host, g.token = credentialHost, c.Token(credentialHost)
	}
	hc.Transport = g
	return &hc
}

// guard is the transport every request of a Client goes through,
// redirects included (each is a request of its own here): a URL the
// allow-list refuses fails before any connection, and the origin's
// credentials go only to the origin host itself, over https — never to
// another host, a subdomain, or a plain-http URL on the same host, which
// Go's redirect rules would send them to.
type guard struct {
	next        http.RoundTripper
	allow       Hosts
	host, token string
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.allow.check(req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return g.next.RoundTrip(g.withCredentials(req))
}

// withCredentials is req with the origin's token when it goes to the
// origin host over https, and without any Authorization otherwise.
func (g *guard) withCredentials(req *http.Request) *http.Request {
	toOrigin := g.token != "" && req.URL.Scheme == "https" && req.URL.Host == g.host
	if !toOrigin && req.Header.Get("Authorization") == "" {
		return req
	}
	r := req.Clone(req.Context())
	if toOrigin {
		r.Header.Set("Authorization", "Bearer "+g.token)
	} else {
		r.Header.Del("Authorization")
	}
	return r
}
