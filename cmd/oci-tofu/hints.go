package main

import "github.com/oci-tofu/oci-tofu/oci"

// hint suggests a fix for common registry failures, or returns "".
func hint(err error) string {
	switch oci.Classify(err) {
	case oci.FailureUnauthorized:
		return "the registry wants credentials: run `docker login HOST`, or pass --username with --password-stdin, or set OCI_TOFU_USERNAME and OCI_TOFU_PASSWORD"
	case oci.FailureDenied:
		return "the registry refused these credentials for this repository: check the account's push/pull rights"
	case oci.FailureTLS:
		return "the registry's certificate is not trusted: pass --ca-file CA.pem or set SSL_CERT_FILE"
	}
	return ""
}
