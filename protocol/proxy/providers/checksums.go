package providers

import (
	"context"
	"fmt"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// checksums returns what the Provider Registry Protocol needs to let
// clients verify a stored release: the publisher's SHA256SUMS, signature
// and keys from its provenance, or, for artifacts without them, a
// SHA256SUMS generated from the OCI layer digests and signed with the
// operator's key (cached by release).
//
// The publisher's signature is not checked again here: it was checked,
// with OpenTofu's rules, when the release was pushed, and what is served
// are those very bytes (every provenance file is read by digest, from the
// index the archive URL names). Checking time validity now would make
// every release unservable once its key expires; clients check the
// signature themselves anyway.
func (h *Handlers) checksums(ctx context.Context, rel *source.ProviderRelease) (*signedSums, error) {
	if rel.ChecksumsErr != nil {
		return nil, rel.ChecksumsErr
	}
	if rel.Checksums != nil {
		sums, err := sha256sums.Parse(rel.Checksums.Data)
		if err != nil {
			return nil, &source.Unservable{Msg: fmt.Sprintf("provider %s %s: the SHA256SUMS stored with the artifact cannot be read", rel.Provider, rel.Version), Err: err}
		}
		return &signedSums{Checksums: rel.Checksums, sums: sums}, nil
	}
	if h.signer == nil {
		return nil, &source.Conflict{Msg: fmt.Sprintf("provider %s %s has no publisher signature in its OCI artifact and this proxy has no signing key: "+
			"it is offered through the network mirror protocol only", rel.Provider, rel.Version)}
	}
	res, err := h.generated.Get(ctx, rel.Root.Repo.Name()+"@"+rel.Root.Digest.String(), func(context.Context) (*signedSums, int64, error) {
		cs, err := h.generateChecksums(rel)
		if err != nil {
			return nil, 0, err
		}
		return cs, int64(2*len(cs.Data) + len(cs.Signature) + 4096), nil
	})
	return res.Val, err
}

// signedSums are a release's checksums with SHA256SUMS parsed.
type signedSums struct {
	*source.Checksums
	sums sha256sums.Sums
}

// generateChecksums makes and signs a SHA256SUMS of every package of rel.
func (h *Handlers) generateChecksums(rel *source.ProviderRelease) (*signedSums, error) {
	sums := sha256sums.Sums{}
	for pl, pkg := range rel.Packages {
		sums[names.ProviderZipName(rel.Provider.Type, rel.Version.String(), pl)] = pkg.Layer.Digest.Encoded()
	}
	data := sums.Bytes()
	sig, err := h.signer.Sign(data, time.Now())
	if err != nil {
		return nil, err
	}
	return &signedSums{sums: sums, Checksums: &source.Checksums{Data: data, Signature: sig,
		Keys: []wire.GPGPublicKey{{KeyID: h.signer.KeyID(), ASCIIArmor: string(h.signer.Public)}}}}, nil
}

// checkListed makes sure SHA256SUMS lists a platform's package with the
// digest of the zip the proxy will serve, and returns the file name it
// lists it under; anything else would make the client fail (or worse)
// later.
func checkListed(rel *source.ProviderRelease, cs *signedSums, pl names.Platform, zipHex string) (string, error) {
	name := cs.Filenames[pl]
	if name == "" {
		name = names.ProviderZipName(rel.Provider.Type, rel.Version.String(), pl)
	}
	sums := cs.sums
	if sums[name] != zipHex {
		return "", &source.Unservable{Msg: fmt.Sprintf("provider %s %s: the stored SHA256SUMS does not list %s with the digest of the zip in the OCI artifact", rel.Provider, rel.Version, name),
			Err: fmt.Errorf("%s lists %q, the zip is %s", name, sums[name], zipHex)}
	}
	return name, nil
}
