package protocol

import (
	"context"
	"net/http"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
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

// filename is the release file name a platform's package is listed under.
func (c *checksums) filename(r *release, p names.Platform) string {
	if !c.generated && r.prov != nil {
		if pp, ok := r.prov.meta.Platforms[p.String()]; ok && pp.Filename != "" {
			return pp.Filename
		}
	}
	return zipName(r.Provider.Type, r.Version, p)
}

// signedByPublisher reports whether a release carries the publisher's
// verified SHA256SUMS, signature and keys.
func (r *release) signedByPublisher() bool {
	return r.prov != nil && r.prov.files.SHA256SUMS.Data != nil && r.prov.files.Signature.Data != nil &&
		r.prov.files.Keys.Data != nil && len(r.prov.meta.SigningKeyIDs) > 0
}

// registryCapable reports whether the registry protocol can offer a release.
func (s *source) registryCapable(r *release) bool {
	return r.signedByPublisher() || s.signer != nil
}

func errUnsigned(r *release) error {
	return statusErr(http.StatusConflict, nil,
		"provider %s %s has no publisher signature in its OCI artifact and this proxy has no --signing-key: "+
			"it is offered through the network mirror protocol only", r.Provider, r.Version)
}

// checksums returns the release's signed SHA256SUMS: the publisher's
// originals from provenance (their signature checked here as clients check
// it), or, for artifacts without them, a SHA256SUMS generated from the OCI
// layer digests and signed with the operator's key.
func (s *source) checksums(ctx context.Context, r *release) (*checksums, error) {
	key := r.repoName + "@" + r.pv.Index.Digest.String() + "/" + r.Version.String()
	return s.sums.do(ctx, key, s.timeout, func(ctx context.Context) (*checksums, error) {
		if r.signedByPublisher() {
			return publisherChecksums(r)
		}
		if s.signer == nil {
			return nil, errUnsigned(r)
		}
		zips, err := s.allZips(ctx, r)
		if err != nil {
			return nil, err
		}
		sums := sha256sums.Sums{}
		for p, z := range zips {
			sums[zipName(r.Provider.Type, r.Version, p)] = z.Digest.Encoded()
		}
		data := sums.Bytes()
		sig, err := s.signer.Sign(data, time.Now())
		if err != nil {
			return nil, err
		}
		return &checksums{sums: sums, data: data, signature: sig, generated: true,
			keys: []wire.GPGPublicKey{{KeyID: s.signer.KeyID(), ASCIIArmor: string(s.signer.Public)}}}, nil
	})
}

func publisherChecksums(r *release) (*checksums, error) {
	f := r.prov.files
	invalid := func(err error) error {
		return statusErr(http.StatusBadGateway, err, "provider %s %s: the provenance stored with the artifact does not verify", r.Provider, r.Version)
	}
	sums, err := sha256sums.Parse(f.SHA256SUMS.Data)
	if err != nil {
		return nil, invalid(err)
	}
	kr, err := pgp.ReadKeyring("stored signing keys", f.Keys.Data)
	if err != nil {
		return nil, invalid(err)
	}
	sig, err := pgp.DearmorSignature(f.Signature.Data)
	if err != nil {
		return nil, invalid(err)
	}
	v, err := pgp.VerifyDetached(f.SHA256SUMS.Data, sig, []*pgp.Keyring{kr})
	if err != nil {
		return nil, invalid(err)
	}
	return &checksums{sums: sums, data: f.SHA256SUMS.Data, signature: sig,
		keys: []wire.GPGPublicKey{{KeyID: v.KeyID, ASCIIArmor: string(f.Keys.Data)}}}, nil
}

// checkListed makes sure SHA256SUMS lists a platform's package with the
// digest of the zip the proxy will serve; anything else would make the
// client fail (or worse) later.
func (c *checksums) checkListed(r *release, p names.Platform, zipHex string) (string, error) {
	name := c.filename(r, p)
	if c.sums[name] != zipHex {
		return "", statusErr(http.StatusBadGateway, nil,
			"provider %s %s: the stored SHA256SUMS does not list %s with the digest of the zip in the OCI artifact", r.Provider, r.Version, name)
	}
	return name, nil
}
