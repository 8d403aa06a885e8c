package attest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Sigstore bundles, as cosign v3 writes them by default: a referrer of
// the signed manifest (artifact type oci.ArtifactTypeSigstoreBundle)
// whose one layer is a bundle holding a DSSE envelope. `cosign sign`
// puts an in-toto statement of predicate type CosignSignPredicateType
// about the manifest in it, `cosign attest` the statement it is given
// (docs/artifacts.md, "Referrers"). Only key-based bundles are checked
// here: the envelope's signature with the key, as `cosign verify --key
// --insecure-ignore-tlog` does; transparency-log entries and
// certificates in the bundle are not consulted.

// CosignSignPredicateType is the predicate type of the statement cosign
// v3 signs for `cosign sign` in a bundle.
const CosignSignPredicateType = "https://sigstore.dev/cosign/sign/v1"

// sigstoreBundle is the part of a Sigstore bundle (v0.1 to v0.3, in
// protobuf's JSON form) we read.
type sigstoreBundle struct {
	MediaType    string    `json:"mediaType"`
	DSSEEnvelope *envelope `json:"dsseEnvelope"`
}

// bundleMediaTypePrefix is the media type of every bundle version.
const bundleMediaTypePrefix = "application/vnd.dev.sigstore.bundle"

// openBundleReferrer returns the statement of a bundle referrer signed
// by v.
func openBundleReferrer(r oci.Referrer, v *Verifier) (*Statement, error) {
	raw, err := bundleLayer(r)
	if err != nil {
		return nil, err
	}
	var b sigstoreBundle
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", r.Descriptor.Digest, err)
	}
	if !strings.HasPrefix(b.MediaType, bundleMediaTypePrefix) {
		return nil, fmt.Errorf("bundle %s has media type %q", r.Descriptor.Digest, b.MediaType)
	}
	if b.DSSEEnvelope == nil {
		return nil, errors.New("bundle " + r.Descriptor.Digest.String() + " holds no DSSE envelope")
	}
	return openEnvelope(v, *b.DSSEEnvelope)
}

// bundleLayer is the bundle a bundle referrer holds (its one layer), or
// why it holds none.
func bundleLayer(r oci.Referrer) ([]byte, error) {
	if r.Err != nil {
		return nil, r.Err
	}
	if len(r.Layers) != 1 || !strings.HasPrefix(r.Layers[0].MediaType, bundleMediaTypePrefix) {
		return nil, fmt.Errorf("bundle %s does not hold one bundle layer", r.Descriptor.Digest)
	}
	return r.Layers[0].Payload, nil
}
