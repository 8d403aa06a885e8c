//go:build !nokeyless

package main

import (
	"fmt"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/keyless"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
)

// readKeyless sets serve's keyless admission from --trusted-root and the
// keyless:ISSUER=IDENTITY values of --require-attestation. Keyless
// verification (sigstore-go, about 7.6 MB of the binary) is left out of
// builds with the nokeyless tag (keyless_off.go).
func readKeyless(trustedRoot string, identities []string, opts *proxy.Options) error {
	if len(identities) == 0 {
		if trustedRoot != "" {
			return fmt.Errorf("--trusted-root is for --require-attestation keyless:ISSUER=IDENTITY: give one")
		}
		return nil
	}
	v, err := loadKeyless("--require-attestation", trustedRoot, identities)
	if err != nil {
		return err
	}
	opts.RequireKeyless = v
	return nil
}

// loadKeyless reads the trusted root and the identities (ISSUER=IDENTITY,
// given with flag) into one verifier: any of them may have signed.
func loadKeyless(flag, trustedRoot string, identities []string) (*keyless.Verifier, error) {
	if trustedRoot == "" {
		return nil, fmt.Errorf("%s keyless:… needs --trusted-root FILE (the Sigstore trusted_root.json to check certificates, Rekor entries and timestamps against, offline)", flag)
	}
	ids := make([]keyless.Identity, len(identities))
	for i, s := range identities {
		id, err := keyless.ParseIdentity(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		ids[i] = id
	}
	v, err := keyless.LoadVerifier(trustedRoot, ids)
	if err != nil {
		return nil, fmt.Errorf("--trusted-root: %w", err)
	}
	return v, nil
}

// keylessChecks are verify's keyless identities (--attest-pub
// keyless:ISSUER=IDENTITY), each of which must have attested.
func keylessChecks(trustedRoot string, identities []string) ([]attest.Checker, error) {
	if len(identities) == 0 {
		if trustedRoot != "" {
			return nil, fmt.Errorf("--trusted-root is for --attest-pub keyless:ISSUER=IDENTITY: give one")
		}
		return nil, nil
	}
	var out []attest.Checker
	for _, id := range identities {
		v, err := loadKeyless("--attest-pub", trustedRoot, []string{id})
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func init() { policy.SetKeylessLoader(loadPolicyKeyless) }

// loadPolicyKeyless reads a policy's keyless:ISSUER=IDENTITY signer
// against its trusted_root, with the verifier --require-attestation
// keyless:… uses.
func loadPolicyKeyless(trustedRoot, identity string) (attest.BundleChecker, error) {
	id, err := keyless.ParseIdentity(identity)
	if err != nil {
		return nil, err
	}
	v, err := keyless.LoadVerifier(trustedRoot, []keyless.Identity{id})
	if err != nil {
		return nil, fmt.Errorf("trusted_root: %w", err)
	}
	return v, nil
}
