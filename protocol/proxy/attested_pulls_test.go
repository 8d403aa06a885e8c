package proxy

import (
	"context"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
)

// keyOnly is an attester that only names its key.
type keyOnly struct{ k *attest.Verifier }

func (a keyOnly) Attest(context.Context, oci.Repository, string, digest.Digest, string, any) error {
	return nil
}
func (a keyOnly) AttestOnly(context.Context, oci.Repository, string, ocispec.Descriptor, bool, string, any) (func(context.Context) error, error) {
	return nil, nil
}
func (a keyOnly) Key() *attest.Verifier { return a.k }

// Pull-through beside RequireAttestation: refused without an attester or
// with one whose key is not required; accepted when its key is among them.
func TestRequireAttestationWithAttestedPullThrough(t *testing.T) {
	own, other := attesttest.Signer(t), attesttest.Signer(t)
	for _, tc := range []struct {
		name     string
		attest   *ingest.Attestation
		required []*attest.Verifier
		want     string
	}{
		{"no attester", nil, []*attest.Verifier{own.Public()}, "without an attester"},
		{"other key", &ingest.Attestation{Attester: keyOnly{own.Public()}}, []*attest.Verifier{other.Public()}, "not among"},
		{"own key", &ingest.Attestation{Attester: keyOnly{own.Public()}}, []*attest.Verifier{other.Public(), own.Public()}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkAttestedPulls(Options{RequireAttestation: tc.required, PullThrough: &pullthrough.Options{Attest: tc.attest}})
			if tc.want == "" && err != nil {
				t.Errorf("refused: %v", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("got %v, want a refusal with %q", err, tc.want)
			}
		})
	}
}
