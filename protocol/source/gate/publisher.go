package gate

import (
	"context"
	"slices"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// publisherKey is the primary key ID of the OpenPGP key that signed a
// provider release's packages, for a policy's publisher: signers: the
// SHA256SUMS and detached signature its provenance keeps are verified
// again with the keys it keeps (as OpenTofu verifies them: an expired key
// is accepted), the key must be one push recorded as verified, and
// SHA256SUMS must list every platform's zip by the digest the proxy
// serves it by. "" when any of that fails, or the release has no
// provenance: it is then signed by no publisher. The error is for the
// registry failing.
func publisherKey(ctx context.Context, root source.Root) (string, error) {
	if root.Index == nil {
		return "", nil
	}
	prov, err := root.Repo.Provenance(ctx, root.Index)
	if err != nil || prov == nil {
		return "", contentOnly(err)
	}
	f := prov.Files
	if f.SHA256SUMS.Data == nil || f.Signature.Data == nil || f.Keys.Data == nil {
		return "", nil
	}
	kr, err := pgp.ReadKeyring("the release's keys", f.Keys.Data)
	if err != nil {
		return "", nil
	}
	v, err := pgp.VerifyDetached(f.SHA256SUMS.Data, f.Signature.Data, []*pgp.Keyring{kr})
	if err != nil || !slices.Contains(prov.Meta.SigningKeyIDs, v.KeyID) {
		return "", nil
	}
	sums, err := sha256sums.Parse(f.SHA256SUMS.Data)
	if err != nil {
		return "", nil
	}
	zips, err := root.Repo.Zips(ctx, root.Index)
	if err != nil {
		return "", contentOnly(err)
	}
	listed := make(map[string]bool, len(sums))
	for _, hex := range sums {
		listed[hex] = true
	}
	for _, z := range zips {
		if !listed[z.Digest.Encoded()] {
			return "", nil
		}
	}
	return v.KeyID, nil
}

// contentOnly is nil for an error about the artifact itself (it is then
// signed by no publisher) and err for the registry failing.
func contentOnly(err error) error {
	if err == nil || oci.IsContentProblem(err) || store.Skippable(err) {
		return nil
	}
	return err
}
