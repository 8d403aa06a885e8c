package attest

import (
	"context"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Trust is a signature requirement beyond cosign keys that an operator
// configures (serve --require-notation, verify --notation): the seam
// heavier verifiers live behind, in packages of their own that a build
// may leave out (convert/attest/notation: Notary Project signatures
// under a notation trust store and trust policy). Admission (serve's
// --require-notation) names one by Name.
type Trust interface {
	// Name names the requirement in messages and logs.
	Name() string
	// Check says whether subject, a root in repo, is signed as the
	// requirement asks: refusal nil when it is, else why not (a hostile
	// or broken signature is a refusal). repository is its name as
	// clients name it (host/path; for an OCI layout, oci-layout:PATH),
	// which trust policies may be scoped to. err is for failing to read
	// the registry.
	Check(ctx context.Context, repo oci.ReadOnlyRepository, repository string, subject digest.Digest) (refusal, err error)
}
