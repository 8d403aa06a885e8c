package keyless

import (
	"encoding/hex"
	"fmt"

	"github.com/sigstore/sigstore-go/pkg/bundle"

	"github.com/oci-tofu/oci-tofu/oci"
)

// signedBundle is a parsed Sigstore bundle.
type signedBundle = *bundle.Bundle

// BundleMediaTypePrefix starts the media types of Sigstore bundles
// ("application/vnd.dev.sigstore.bundle.v0.3+json"; older ones name the
// version as a parameter): cosign v3 stores keyless attestations as such
// bundles.
const BundleMediaTypePrefix = "application/vnd.dev.sigstore.bundle"

// parseBundle reads a Sigstore bundle (v0.1 to v0.3; sigstore-go checks
// it is well formed: a v0.2+ bundle's Rekor entry carries its inclusion
// proof).
func parseBundle(b []byte) (signedBundle, error) {
	if len(b) > oci.MaxSmallFile {
		return nil, errTooLarge
	}
	var out bundle.Bundle
	if err := out.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("not a Sigstore bundle: %w", err)
	}
	if _, err := out.Envelope(); err != nil {
		return nil, fmt.Errorf("the bundle holds no DSSE envelope (a message signature is no attestation): %w", err)
	}
	return &out, nil
}

func hexBytes(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("digest %q: %w", s, err)
	}
	return b, nil
}
