package release

import (
	"context"
	"fmt"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci"
)

// CheckProvenance judges the files stored with a provider release as
// ReadProvider judges a release directory, now: SHA256SUMS as OpenTofu
// reads it, and its signature against the stored keys with OpenTofu's
// default policy, as stored (the proxy serves it byte for byte, so an
// armored signature stored by another tool is refused). The error is what
// OpenTofu, installing the release through the registry protocol, would
// refuse; the warnings what it would handle differently from a clean
// release, an expired key among them. Files without SHA256SUMS or
// signature give neither.
func CheckProvenance(files *oci.ProvenanceFiles) ([]string, error) {
	if files == nil || files.SHA256SUMS.Data == nil {
		return nil, nil
	}
	sums, err := sha256sums.Read(files.SHA256SUMS.Data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", files.SHA256SUMS.Name, err)
	}
	warnings := sums.Warnings()
	if files.Signature.Data == nil {
		return warnings, nil
	}
	kr, err := pgp.ReadKeyring(files.Keys.Name, files.Keys.Data)
	if err != nil {
		return warnings, err
	}
	v, err := pgp.VerifyDetached(files.SHA256SUMS.Data, files.Signature.Data, []*pgp.Keyring{kr})
	if err != nil {
		return warnings, fmt.Errorf("%s: %w", files.Signature.Name, err)
	}
	return append(warnings, v.Warnings...), nil
}

// StoredWarnings reads the provenance of the provider release whose index
// is given and returns CheckProvenance's warnings: those a push of the
// release gave, judged again now. A release without provenance has none.
func StoredWarnings(ctx context.Context, repo oci.ReadOnlyRepository, index ocispec.Descriptor) ([]string, error) {
	pv, err := oci.ReadProviderIndex(ctx, repo, index)
	if err != nil || pv.Provenance == nil {
		return nil, err
	}
	_, files, err := oci.ReadProvenance(ctx, repo, *pv.Provenance)
	if err != nil {
		return nil, err
	}
	return CheckProvenance(files)
}
