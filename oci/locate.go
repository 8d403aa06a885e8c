package oci

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// FetchOrLocate opens blob desc of repo for reading, unless the registry
// redirects the blob's download to storage at another origin (S3, GCS,
// Azure, a CDN): then location is that storage URL, which anyone holding
// it may fetch without credentials, and rc is nil. The registry is asked
// once, with the client's credentials; they never go to the storage, and
// the storage is not contacted. A redirect within the registry's own
// origin is followed. OCI layouts, registries serving blobs themselves,
// and redirects to plain HTTP or to a URL carrying credentials give a
// reader. The caller verifies what it reads (digest and size).
func FetchOrLocate(ctx context.Context, repo ReadOnlyRepository, desc ocispec.Descriptor) (location string, rc io.ReadCloser, err error) {
	rr, ok := repo.(*remote.Repository)
	if !ok {
		rc, err := repo.Fetch(ctx, desc)
		return "", rc, err
	}
	if err := desc.Digest.Validate(); err != nil {
		return "", nil, fmt.Errorf("%w: blob digest %q: %v", ErrInvalidArtifact, desc.Digest, err)
	}
	stop := &storageStop{}
	stopping := auth.AppendRepositoryScope(context.WithValue(ctx, storageStopKey{}, stop), rr.Reference, auth.ActionPull)
	req, err := http.NewRequestWithContext(stopping, http.MethodGet, blobURL(rr, desc), nil)
	if err != nil {
		return "", nil, err
	}
	resp, err := rr.Client.Do(req)
	if err != nil {
		return "", nil, err
	}
	loc, rc, err := answerOfBlobGET(resp, stop)
	if err == nil && loc == "" && rc == nil {
		// Storage a client should not be sent to: fetch the blob as
		// always (the redirect followed, credentials left behind).
		rc, err = rr.Fetch(ctx, desc)
	}
	return loc, rc, err
}

// answerOfBlobGET reads the registry's answer to a blob GET that stops at
// the first redirect leaving its origin: the blob, the storage URL to hand
// out, or neither (a redirect not to hand out).
func answerOfBlobGET(resp *http.Response, stop *storageStop) (string, io.ReadCloser, error) {
	switch {
	case resp.StatusCode == http.StatusOK:
		return "", resp.Body, nil
	case stop.location != nil && isRedirect(resp.StatusCode):
		resp.Body.Close()
		loc, _ := handOutable(stop.location)
		return loc, nil, nil
	}
	resp.Body.Close()
	return "", nil, &errcode.ErrorResponse{Method: resp.Request.Method, URL: resp.Request.URL, StatusCode: resp.StatusCode}
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// handOutable is the storage URL as a client may be sent to it: HTTPS and
// no credentials of its own in the URL.
func handOutable(u *url.URL) (string, bool) {
	if u.Scheme != "https" || u.User != nil || u.Host == "" {
		return "", false
	}
	return u.String(), true
}

// blobURL is the registry's URL for a blob (the distribution spec's
// GET /v2/<name>/blobs/<digest>).
func blobURL(rr *remote.Repository, desc ocispec.Descriptor) string {
	scheme := "https"
	if rr.PlainHTTP {
		scheme = "http"
	}
	return scheme + "://" + rr.Reference.Host() + "/v2/" + rr.Reference.Repository + "/blobs/" + desc.Digest.String()
}

// storageStop marks a request whose redirects stop where they leave the
// registry's origin; location is where they would have gone.
type storageStop struct{ location *url.URL }

type storageStopKey struct{}
