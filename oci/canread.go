package oci

import (
	"context"
	"errors"
	"fmt"

	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// errFirstPage stops a tag listing after its first page.
var errFirstPage = errors.New("first page read")

// CanRead asks the registry whether the holder of username and password
// may read ref's repository: it lists the repository's tags (one page of
// one tag) with those credentials, not the client's, through the
// client's transport and etiquette, with a token cache of its own, so
// nothing of the client's credentials or tokens is used or shared. A
// repository that does not exist, when the registry says so to these
// credentials, can be read (there is nothing in it). An OCI layout has
// no permissions: always nil. Otherwise the error is classified
// (Classify): FailureUnauthorized or FailureDenied when the registry
// refuses.
func (c *Client) CanRead(ctx context.Context, ref Reference, username, password string) error {
	if ref.Layout {
		return nil
	}
	repo, err := remote.NewRepository(ref.Registry + "/" + ref.Repository)
	if err != nil {
		return fmt.Errorf("invalid repository %s: %w", ref.Name(), err)
	}
	cred := auth.Credential{Username: username, Password: password}
	repo.Client = &auth.Client{
		Client:     c.auth.Client,
		Cache:      auth.NewCache(),
		Credential: func(context.Context, string) (auth.Credential, error) { return cred, nil },
		Header:     c.auth.Header,
	}
	repo.PlainHTTP = c.opts.PlainHTTP
	repo.TagListPageSize = 1
	err = repo.Tags(ctx, "", func([]string) error { return errFirstPage })
	switch {
	case err == nil, errors.Is(err, errFirstPage), Classify(err) == FailureNotFound:
		return nil
	}
	return err
}
