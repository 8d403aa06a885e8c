package attest

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// Sigstore bundles, as cosign v3 writes them by default: a referrer of
// the signed manifest (artifact type attach.ArtifactTypeSigstoreBundle)
// whose one layer is a bundle holding a DSSE envelope. `cosign sign`
// puts an in-toto statement of predicate type CosignSignPredicateType
// about the manifest in it, `cosign attest` the statement it is given
// (docs/artifacts.md, "Referrers"). Attach writes its signature and
// attestation in this form too (sealBundle, bundleAnnotations). Only
// key-based bundles are checked here: the envelope's signature with the
// key, as `cosign verify --key --insecure-ignore-tlog` does;
// transparency-log entries and certificates in the bundle are not
// consulted.

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
func openBundleReferrer(r attach.Referrer, v *Verifier) (*Statement, error) {
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
func bundleLayer(r attach.Referrer) ([]byte, error) {
	if r.Err != nil {
		return nil, r.Err
	}
	if len(r.Layers) != 1 || !strings.HasPrefix(r.Layers[0].MediaType, bundleMediaTypePrefix) {
		return nil, fmt.Errorf("bundle %s does not hold one bundle layer", r.Descriptor.Digest)
	}
	return r.Layers[0].Payload, nil
}

// Annotations cosign v3 gives a bundle referrer's manifest
// (pkg/oci/remote WriteAttestationNewBundleFormat); the predicate type's
// is listed with the referrer (the catalogue reads it).
const (
	annotationBundleContent       = "dev.sigstore.bundle.content"
	AnnotationBundlePredicateType = "dev.sigstore.bundle.predicateType"
)

// sealBundle is the Sigstore bundle (v0.3, in the JSON form of its
// protobuf message, as cosign v3 writes it with a key and no
// transparency log) holding ss in a DSSE envelope, its verification
// material the key's hint (the base64 SHA-256 of its PKIX form, as
// sigstore-go names a key). encoding/json writes it: the message's four
// fields are fixed, and protobuf-specs' generated code with protojson
// would add about 1 MB to a build without sigstore-go (-tags nokeyless).
// TestAttachWritesReferrers holds it to sigstore-go's parser and
// verifier, which cosign v3 runs.
func sealBundle(v *Verifier, ss signedStatement) ([]byte, error) {
	hint, err := v.hint()
	if err != nil {
		return nil, err
	}
	type publicKey struct {
		Hint string `json:"hint"`
	}
	type verificationMaterial struct {
		PublicKey publicKey `json:"publicKey"`
	}
	type signature struct {
		Sig string `json:"sig"`
	}
	type dsseEnvelope struct {
		Payload     string      `json:"payload"`
		PayloadType string      `json:"payloadType"`
		Signatures  []signature `json:"signatures"`
	}
	return json.Marshal(struct {
		MediaType            string               `json:"mediaType"`
		VerificationMaterial verificationMaterial `json:"verificationMaterial"`
		DSSEEnvelope         dsseEnvelope         `json:"dsseEnvelope"`
	}{
		MediaType:            attach.ArtifactTypeSigstoreBundle,
		VerificationMaterial: verificationMaterial{PublicKey: publicKey{Hint: hint}},
		DSSEEnvelope:         dsseEnvelope{Payload: b64(ss.body), PayloadType: inTotoPayloadType, Signatures: []signature{{Sig: b64(ss.sig)}}},
	})
}

// bundleAnnotations are the annotations of a bundle referrer of
// predicateType made at created, as cosign v3 writes them.
func bundleAnnotations(predicateType string, created time.Time) map[string]string {
	return map[string]string{
		annotationBundleContent:       "dsse-envelope",
		AnnotationBundlePredicateType: predicateType,
		ocispec.AnnotationCreated:     created.UTC().Format(time.RFC3339),
	}
}

// hint names the key as sigstore-go's keypairs do: the base64 SHA-256 of
// its PKIX DER form.
func (v *Verifier) hint() (string, error) {
	der, err := x509.MarshalPKIXPublicKey(v.key)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}
