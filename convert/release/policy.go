package release

import (
	"context"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
)

// SignaturePolicy is the policy ReadProvider judges a release's SHA256SUMS
// signature with, for callers that must check the signature before they
// hold the release directory (pull-through checks it before downloading
// any package): expiry is enforced when opts or an EnforcingGPGExpiration
// context says so.
func SignaturePolicy(ctx context.Context, opts Options) pgp.Policy {
	return pgp.Policy{EnforceExpiration: opts.EnforceGPGExpiration || enforcingGPGExpiration(ctx)}
}
