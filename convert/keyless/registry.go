package keyless

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/oci"
)

// VerifyInRegistry reads the Sigstore bundles stored as referrers of
// subject (oci.ReadSigstoreBundles: bounded in number and size) and
// returns the statement of the first that verifies as an attestation of
// subject with predicateType, and who signed it. When none does, refusal
// says why (a broken or hostile referrer is a refusal, never an error);
// err is for failing to read the registry.
func (v *Verifier) VerifyInRegistry(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, predicateType string) (st *attest.Statement, id Identity, refusal, err error) {
	bundles, err := oci.ReadSigstoreBundles(ctx, repo, ocispec.Descriptor{Digest: subject})
	if err != nil {
		switch oci.Classify(err) {
		case oci.FailureInvalid, oci.FailureCorrupt, oci.FailureNotFound:
			return nil, Identity{}, fmt.Errorf("keyless attestation: the referrers of %s cannot be read intact (%s)", subject, oci.Classify(err)), nil
		}
		return nil, Identity{}, nil, err
	}
	if len(bundles) == 0 {
		return nil, Identity{}, fmt.Errorf("no Sigstore bundle refers to %s", subject), nil
	}
	var why []string
	for _, b := range bundles {
		st, id, err := v.VerifyAttestation(b, subject, predicateType)
		if err == nil {
			return st, id, nil, nil
		}
		why = appendNew(why, err.Error())
	}
	return nil, Identity{}, errors.New(strings.Join(why, "; ")), nil
}
