package oci

import (
	"errors"
	"net/http"

	"oras.land/oras-go/v2/registry/remote/errcode"
)

// isRemoteNotFound recognises a registry's 404 answers (unknown repository,
// tag or blob), as OpenTofu does.
func isRemoteNotFound(err error) bool {
	var resp *errcode.ErrorResponse
	return errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound
}
