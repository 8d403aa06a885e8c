package origin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
)

// Body is a download in progress: the origin's answer, with its size when
// the origin said (Content-Length), read at most up to the bound it was
// opened with.
type Body struct {
	io.ReadCloser
	// Size is the announced length, or -1 when the origin sent none.
	Size int64
}

// Open starts downloading u (credentials only when u's host is host, as
// for every request) and returns the body as it arrives, refusing at once
// an announced length above max; the caller bounds what it reads.
func (c *Client) Open(ctx context.Context, u *url.URL, host string, max int64) (*Body, error) {
	resp, err := c.get(ctx, u, host)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > max {
		resp.Body.Close()
		return nil, fmt.Errorf("downloading %s: %d bytes announced, more than %d", u.Redacted(), resp.ContentLength, max)
	}
	return &Body{ReadCloser: resp.Body, Size: resp.ContentLength}, nil
}

// SetProvidersBase fixes where host's providers.v1 service is, instead of
// asking the host's service discovery: what a `host` block of OpenTofu's CLI
// configuration does. base must be an absolute http(s) URL.
func (c *Client) SetProvidersBase(host string, base *url.URL) error {
	return c.setBase(host, "providers.v1", base)
}

func (c *Client) setBase(host, service string, base *url.URL) error {
	if base == nil || base.Scheme != "https" || base.Host == "" || base.User != nil {
		return fmt.Errorf("%s URL for %s must be an absolute https URL", service, host)
	}
	b := *base
	if !strings.HasSuffix(b.Path, "/") {
		b.Path += "/"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.discovery == nil {
		c.discovery = map[string]*url.URL{}
	}
	c.discovery[discoveryKey(host, service)] = &b
	return nil
}

// Unreachable reports whether err means the origin could not be reached at
// all or did not answer in time (as opposed to answering "no" or
// answering something wrong).
func Unreachable(err error) bool {
	var ne net.Error
	var ue *url.Error
	switch {
	case errors.Is(err, ErrRefused):
		return false // refused here, before any connection
	case errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &ne):
		return true
	case errors.As(err, &ue):
		return !errors.Is(err, context.Canceled)
	}
	return false
}
