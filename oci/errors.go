package oci

import (
	"crypto/x509"
	"errors"
	"net/http"

	"oras.land/oras-go/v2/registry/remote/auth"

	"oras.land/oras-go/v2/registry/remote/errcode"
)

// isRemoteNotFound recognises a registry's 404 answers (unknown repository,
// tag or blob), as OpenTofu does.
func isRemoteNotFound(err error) bool {
	var resp *errcode.ErrorResponse
	return errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound
}

// Hint suggests a fix for common registry failures (missing or refused
// credentials, untrusted certificates), or returns "".
func Hint(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var resp *errcode.ErrorResponse
	switch {
	case errors.Is(err, auth.ErrBasicCredentialNotFound),
		errors.As(err, &resp) && resp.StatusCode == http.StatusUnauthorized:
		return "the registry wants credentials: run `docker login HOST`, or pass --username with --password-stdin, or set OCI_TOFU_USERNAME and OCI_TOFU_PASSWORD"
	case errors.As(err, &resp) && resp.StatusCode == http.StatusForbidden:
		return "the registry refused these credentials for this repository: check the account's push/pull rights"
	case errors.As(err, &unknownCA):
		return "the registry's certificate is signed by an unknown authority: pass --ca-file CA.pem or set SSL_CERT_FILE"
	}
	return ""
}
