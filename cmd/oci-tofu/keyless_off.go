//go:build nokeyless

package main

import (
	"errors"
	"fmt"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
)

// readKeyless refuses keyless identities in a build without keyless
// verification (the nokeyless tag leaves sigstore-go out; keyless.go).
func readKeyless(trustedRoot string, identities []string, opts *proxy.Options) error {
	if len(identities) > 0 || trustedRoot != "" {
		return fmt.Errorf("this oci-tofu is built without keyless verification (build tag nokeyless): --require-attestation keyless:… and --trusted-root are not available")
	}
	return nil
}

// keylessChecks refuses keyless identities in a build without keyless
// verification.
func keylessChecks(trustedRoot string, identities []string) ([]attest.Checker, error) {
	return nil, readKeyless(trustedRoot, identities, nil)
}

func init() {
	policy.SetKeylessLoader(func(string, string) (attest.BundleChecker, error) {
		return nil, errors.New("this oci-tofu is built without keyless verification (build tag nokeyless): keyless: signers are not available")
	})
}
