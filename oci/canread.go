package oci

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// errFirstPage stops a tag listing after its first page.
var errFirstPage = errors.New("first page read")

// ErrCredentialsRefused marks a CanRead error where the registry (or its
// token service) refused the credentials themselves: a 401 to a request
// that carried them (HTTP basic, as Docker's token protocol and basic-auth
// registries take them), a wrong user name or password rather than a
// repository those credentials may not read.
var ErrCredentialsRefused = errors.New("the registry refused the credentials")

// CanRead asks the registry whether the holder of username and password
// may read ref's repository: it lists the repository's tags (one page of
// one tag) with those credentials, not the client's, through the
// client's transport and etiquette, with a token cache of its own, so
// nothing of the client's credentials or tokens is used or shared. Only
// a listing answered confirms: a repository the registry says does not
// exist (FailureNotFound) confirms nothing, as registries answer 404 for
// what a credential may not see. An OCI layout has no permissions:
// always nil. Otherwise the error is classified (Classify):
// FailureUnauthorized or FailureDenied when the registry refuses, and
// wraps ErrCredentialsRefused when it refused the credentials.
func (c *Client) CanRead(ctx context.Context, ref Reference, username, password string) error {
	_, err := c.CanReadAs(ctx, ref, username, password)
	return err
}

// CanReadAs is CanRead, and reports too whether the registry took the
// credentials: whether a request carrying them was answered other than
// 401. A registry that lets anyone read never asks for them, so a yes
// then says nothing of who the holder is.
func (c *Client) CanReadAs(ctx context.Context, ref Reference, username, password string) (took bool, _ error) {
	if ref.Layout {
		return false, nil
	}
	repo, err := remote.NewRepository(ref.Registry + "/" + ref.Repository)
	if err != nil {
		return false, fmt.Errorf("invalid repository %s: %w", ref.Name(), err)
	}
	cred := auth.Credential{Username: username, Password: password}
	watch := &loginWatch{next: c.auth.Client.Transport}
	hc := *c.auth.Client
	hc.Transport = watch
	repo.Client = &auth.Client{
		Client:     &hc,
		Cache:      auth.NewCache(),
		Credential: func(context.Context, string) (auth.Credential, error) { return cred, nil },
		Header:     c.auth.Header,
	}
	repo.PlainHTTP = c.opts.PlainHTTP
	repo.TagListPageSize = 1
	err = repo.Tags(ctx, "", func([]string) error { return errFirstPage })
	switch {
	case err == nil, errors.Is(err, errFirstPage):
		return watch.took.Load(), nil
	case watch.refused.Load():
		return false, fmt.Errorf("%w: %w", ErrCredentialsRefused, err)
	}
	return watch.took.Load(), err
}

// loginWatch notes whether a request carrying a password was answered
// 401 (refused), or otherwise (took).
type loginWatch struct {
	next          http.RoundTripper
	refused, took atomic.Bool
}

func (l *loginWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	next := l.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if err == nil && carriesPassword(req) {
		if resp.StatusCode == http.StatusUnauthorized {
			l.refused.Store(true)
		} else {
			l.took.Store(true)
		}
	}
	return resp, err
}

// carriesPassword reports whether req authenticates with HTTP basic
// credentials (a bearer token is no login).
func carriesPassword(req *http.Request) bool {
	scheme, _, _ := strings.Cut(req.Header.Get("Authorization"), " ")
	return strings.EqualFold(scheme, "Basic")
}
