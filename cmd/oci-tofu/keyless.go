//go:build !nokeyless

package main

import (
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/keyless"
	"github.com/oci-tofu/oci-tofu/oci"
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
	if trustedRoot == "" {
		return fmt.Errorf("--require-attestation keyless:… needs --trusted-root FILE (the Sigstore trusted_root.json to check certificates, Rekor entries and timestamps against, offline)")
	}
	ids := make([]keyless.Identity, len(identities))
	for i, s := range identities {
		id, err := keyless.ParseIdentity(s)
		if err != nil {
			return fmt.Errorf("--require-attestation: %w", err)
		}
		ids[i] = id
	}
	v, err := keyless.LoadVerifier(trustedRoot, ids)
	if err != nil {
		return fmt.Errorf("--trusted-root: %w", err)
	}
	opts.RequireKeyless = keylessAdmission{v}
	return nil
}

// keylessAdmission is proxy.KeylessVerifier over convert/keyless.
type keylessAdmission struct{ v *keyless.Verifier }

func (k keylessAdmission) VerifyKeyless(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, predicateType string) (error, error) {
	_, _, refusal, err := k.v.VerifyInRegistry(ctx, repo, subject, predicateType)
	return refusal, err
}
