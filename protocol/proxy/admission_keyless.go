package proxy

import (
	"context"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/oci"
)

// KeylessVerifier checks keyless attestations (cosign's Sigstore bundles
// stored as referrers of a root) for the admission rule. cmd supplies
// it from convert/keyless (sigstore-go) unless built with the nokeyless
// tag; the proxy itself does not link sigstore-go.
type KeylessVerifier interface {
	// VerifyKeyless returns nil refusal when subject has a keyless
	// attestation of predicateType by an allowed identity; otherwise
	// refusal says why. err is for failing to read the registry.
	VerifyKeyless(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, predicateType string) (refusal, err error)
	// VerifyBundle verifies one bundle as such an attestation: the
	// identities are trusted for ingest times too (policy_facts.go).
	attest.BundleVerifier
}
