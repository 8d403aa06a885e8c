package keyless

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/oci"
)

// VerifyInRegistry reads the Sigstore bundles stored as referrers of
// subject (oci.ReadReferrers: bounded in number and size) and returns the
// statement of the first that verifies as an attestation of subject with
// predicateType, and who signed it. When none does, refusal says why (a
// broken or hostile referrer is a refusal, never an error); err is for
// failing to read the registry.
func (v *Verifier) VerifyInRegistry(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, predicateType string) (st *attest.Statement, id Identity, refusal, err error) {
	refs, err := oci.ReadReferrers(ctx, repo, subject, oci.ArtifactTypeSigstoreBundle)
	if err != nil {
		if oci.IsContentProblem(err) {
			return nil, Identity{}, fmt.Errorf("keyless attestation: the referrers of %s cannot be read intact (%s)", subject, oci.Classify(err)), nil
		}
		return nil, Identity{}, nil, err
	}
	var why []string
	found := false
	for _, r := range refs.Items {
		b, err := bundleOf(r)
		if err != nil {
			why = appendNew(why, err.Error())
			continue
		}
		found = true
		st, id, err := v.VerifyAttestation(b, subject, predicateType)
		if err == nil {
			return st, id, nil, nil
		}
		why = appendNew(why, err.Error())
	}
	if !found && len(why) == 0 {
		return nil, Identity{}, fmt.Errorf("no Sigstore bundle refers to %s", subject), nil
	}
	return nil, Identity{}, errors.New(strings.Join(why, "; ")), nil
}

// bundleOf is the bundle layer of a bundle referrer, or why it has none.
func bundleOf(r oci.Referrer) ([]byte, error) {
	if r.Err != nil {
		return nil, fmt.Errorf("keyless attestation: %w", r.Err)
	}
	for _, l := range r.Layers {
		if strings.HasPrefix(l.MediaType, "application/vnd.dev.sigstore.bundle") {
			return l.Payload, nil
		}
	}
	return nil, fmt.Errorf("keyless attestation: referrer %s holds no Sigstore bundle layer", r.Descriptor.Digest)
}

// VerifyBundle is VerifyAttestation without the identity: the verifier as
// an attest.BundleVerifier, for reading ingest times from the bundles
// attest's evidence reader lists (attest.EarliestIngest).
func (v *Verifier) VerifyBundle(bundleJSON []byte, subject digest.Digest, predicateType string) (*attest.Statement, error) {
	st, _, err := v.VerifyAttestation(bundleJSON, subject, predicateType)
	return st, err
}

var _ attest.BundleVerifier = (*Verifier)(nil)
