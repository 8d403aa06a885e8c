package proxy

import (
	"context"
	"fmt"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// checksums is what the Provider Registry Protocol needs to let clients
// verify a release: SHA256SUMS, its binary detached signature, and the keys.
type checksums struct {
	sums      sha256sums.Sums
	data      []byte
	signature []byte
	keys      []wire.GPGPublicKey
	// generated is true when the proxy made and signed SHA256SUMS itself.
	generated bool
}

// signedByPublisher reports whether a release carries the publisher's
// SHA256SUMS, signature and keys, verified when it was pushed.
func (rel *release) signedByPublisher() bool {
	return rel.prov != nil && rel.prov.Files.SHA256SUMS.Data != nil && rel.prov.Files.Signature.Data != nil &&
		rel.prov.Files.Keys.Data != nil && len(rel.prov.Meta.SigningKeyIDs) > 0
}

func errUnsigned(rel *release) error {
	return &source.Conflict{Msg: fmt.Sprintf("provider %s %s has no publisher signature in its OCI artifact and this proxy has no signing key: "+
		"it is offered through the network mirror protocol only", rel.p, rel.v)}
}

// checksums returns the release's signed SHA256SUMS: the publisher's
// originals from provenance, or, for artifacts without them, a SHA256SUMS
// generated from the OCI layer digests and signed with the operator's key.
//
// The publisher's signature is not checked again here: it was checked,
// with OpenTofu's rules, when the release was pushed, and what is served
// are those very bytes (every provenance file is read by digest, from the
// index the archive URL names). Checking time validity now would make
// every release unservable once its key expires; clients check the
// signature themselves anyway.
func (h *heldProviders) checksums(ctx context.Context, rel *release, zips map[names.Platform]ocispec.Descriptor) (*checksums, error) {
	if rel.provErr != nil {
		return nil, rel.provErr
	}
	if rel.signedByPublisher() {
		return publisherChecksums(rel)
	}
	if h.opts.Signer == nil {
		return nil, errUnsigned(rel)
	}
	res, err := h.generated.Get(ctx, rel.repo.Name()+"@"+rel.pv.Index.Digest.String(), func(context.Context) (*checksums, int64, error) {
		cs, err := h.generateChecksums(rel, zips)
		if err != nil {
			return nil, 0, err
		}
		return cs, int64(len(cs.data) + len(cs.signature) + 4096), nil
	})
	return res.Val, err
}

func (h *heldProviders) generateChecksums(rel *release, zips map[names.Platform]ocispec.Descriptor) (*checksums, error) {
	sums := sha256sums.Sums{}
	for p, z := range zips {
		sums[names.ProviderZipName(rel.p.Type, rel.v.String(), p)] = z.Digest.Encoded()
	}
	data := sums.Bytes()
	sig, err := h.opts.Signer.Sign(data, time.Now())
	if err != nil {
		return nil, err
	}
	return &checksums{sums: sums, data: data, signature: sig, generated: true,
		keys: []wire.GPGPublicKey{{KeyID: h.opts.Signer.KeyID(), ASCIIArmor: string(h.opts.Signer.Public)}}}, nil
}

func publisherChecksums(rel *release) (*checksums, error) {
	f := rel.prov.Files
	sums, err := sha256sums.Parse(f.SHA256SUMS.Data)
	if err != nil {
		return nil, &source.Unservable{Msg: fmt.Sprintf("provider %s %s: the SHA256SUMS stored with the artifact cannot be read", rel.p, rel.v), Err: err}
	}
	return &checksums{sums: sums, data: f.SHA256SUMS.Data, signature: f.Signature.Data,
		keys: []wire.GPGPublicKey{{KeyID: rel.prov.Meta.SigningKeyIDs[0], ASCIIArmor: string(f.Keys.Data)}}}, nil
}

// filename is the release file name a platform's package is listed under.
func (c *checksums) filename(rel *release, p names.Platform) string {
	if !c.generated && rel.prov != nil {
		if pp, ok := rel.prov.Meta.Platforms[p.String()]; ok && pp.Filename != "" {
			return pp.Filename
		}
	}
	return names.ProviderZipName(rel.p.Type, rel.v.String(), p)
}

// checkListed makes sure SHA256SUMS lists a platform's package with the
// digest of the zip the proxy will serve; anything else would make the
// client fail (or worse) later.
func (c *checksums) checkListed(rel *release, p names.Platform, zipHex string) (string, error) {
	name := c.filename(rel, p)
	if c.sums[name] != zipHex {
		return "", &source.Unservable{Msg: fmt.Sprintf("provider %s %s: the stored SHA256SUMS does not list %s with the digest of the zip in the OCI artifact", rel.p, rel.v, name),
			Err: fmt.Errorf("%s lists %q, the zip is %s", name, c.sums[name], zipHex)}
	}
	return name, nil
}
