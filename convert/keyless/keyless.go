// Package keyless verifies attestations signed the way `cosign attest`
// signs without a key (Sigstore "keyless"): a Sigstore bundle holding a
// DSSE envelope with an in-toto statement, the short-lived Fulcio
// certificate that signed it, and the proof that it was signed while the
// certificate was valid (a Rekor transparency-log entry, an RFC 3161
// signed timestamp, or both). Trust comes from an offline trusted root (a
// trusted_root.json the operator supplies, as `cosign trusted-root create`
// writes or Sigstore's TUF repository publishes it) and from identity
// constraints: which OIDC issuer and which certificate identity (subject
// alternative name) may have signed. Nothing is fetched: no TUF, no Rekor
// or Fulcio lookups. Verification is sigstore-go's (pkg/verify); this
// package decides the policy (docs/security.md, "Trust model";
// docs/proxy.md, "Serving only attested releases").
package keyless

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/oci"
)

// maxTrustedRoot bounds the trusted root file (Sigstore's public one is
// about 7 KiB).
const maxTrustedRoot = 1 << 20

// Identity is who may have signed: the certificate's OIDC issuer and its
// identity (the subject alternative name: an e-mail address, or a URI
// such as a CI workflow's), both compared exactly.
type Identity struct {
	Issuer, Subject string
}

// ParseIdentity reads "ISSUER=IDENTITY" (split at the first "=" after the
// issuer URL's scheme: an issuer URL holds no "="), e.g.
// "https://token.actions.githubusercontent.com=https://github.com/acme/infra/.github/workflows/release.yml@refs/heads/main".
func ParseIdentity(s string) (Identity, error) {
	issuer, subject, ok := strings.Cut(s, "=")
	switch {
	case !ok || issuer == "" || subject == "":
		return Identity{}, fmt.Errorf("keyless identity %q: write ISSUER=IDENTITY (the OIDC issuer URL and the certificate identity)", s)
	case !strings.HasPrefix(issuer, "https://") && !strings.HasPrefix(issuer, "http://"):
		return Identity{}, fmt.Errorf("keyless identity %q: the OIDC issuer %q is not a URL", s, issuer)
	}
	return Identity{Issuer: issuer, Subject: subject}, nil
}

func (id Identity) String() string { return id.Issuer + "=" + id.Subject }

// Verifier checks bundles against one trusted root for a set of
// identities (any of them may have signed).
type Verifier struct {
	verifier   *verify.Verifier
	identities []verify.CertificateIdentity
	names      []Identity
}

// LoadVerifier reads the trusted root file and prepares verification for
// identities. A bundle must carry a certificate chaining to one of the
// root's Fulcio CAs, valid when the signature was made, which is proved by
// at least one observer timestamp: a Rekor entry's signed integration time
// or an RFC 3161 timestamp from one of the root's timestamp authorities.
// When the root lists Rekor logs, the bundle must carry an entry in one of
// them (its inclusion proof verified), as cosign requires by default; when
// it lists CT logs, the certificate must carry a signed certificate
// timestamp from one, as Fulcio's certificates do. The trusted root thus
// says what is required: a private Sigstore with a timestamp authority and
// no Rekor needs only the timestamp.
func LoadVerifier(trustedRootFile string, identities []Identity) (*Verifier, error) {
	b, err := localfile.ReadBounded(trustedRootFile, maxTrustedRoot)
	if err != nil {
		return nil, err
	}
	tr, err := root.NewTrustedRootFromJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: not a Sigstore trusted root: %w", trustedRootFile, err)
	}
	return NewVerifier(tr, identities)
}

// NewVerifier is LoadVerifier with the trusted root already read.
func NewVerifier(tr root.TrustedMaterial, identities []Identity) (*Verifier, error) {
	if len(identities) == 0 {
		return nil, errors.New("keyless verification needs at least one identity (ISSUER=IDENTITY): without one, any certificate the CA ever issued would pass")
	}
	opts := []verify.VerifierOption{verify.WithObserverTimestamps(1)}
	if len(tr.RekorLogs()) > 0 {
		opts = append(opts, verify.WithTransparencyLog(1))
	}
	if len(tr.CTLogs()) > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	v, err := verify.NewVerifier(tr, opts...)
	if err != nil {
		return nil, fmt.Errorf("trusted root: %w", err)
	}
	out := &Verifier{verifier: v, names: identities}
	for _, id := range identities {
		ci, err := verify.NewShortCertificateIdentity(id.Issuer, "", id.Subject, "")
		if err != nil {
			return nil, fmt.Errorf("keyless identity %s: %w", id, err)
		}
		out.identities = append(out.identities, ci)
	}
	return out, nil
}

// Identities are the identities the verifier accepts.
func (v *Verifier) Identities() []Identity { return v.names }

// VerifyAttestation checks one Sigstore bundle (JSON, at most
// oci.MaxSmallFile bytes) as an attestation of subject with predicateType
// and returns its statement and the identity that signed it. A bundle
// that does not verify — another signer, another subject, a tampered
// envelope, a certificate outside the trusted root or its validity, no
// trusted time — is refused with the reason.
func (v *Verifier) VerifyAttestation(bundleJSON []byte, subject digest.Digest, predicateType string) (*attest.Statement, Identity, error) {
	entity, err := parseBundle(bundleJSON)
	if err != nil {
		return nil, Identity{}, err
	}
	want, err := artifactDigest(subject)
	if err != nil {
		return nil, Identity{}, err
	}
	var why []string
	for i, id := range v.identities {
		res, err := v.verifier.Verify(entity, verify.NewPolicy(want, verify.WithCertificateIdentity(id)))
		if err != nil {
			why = appendNew(why, err.Error())
			continue
		}
		if res.Statement == nil {
			return nil, Identity{}, errors.New("the bundle signs no in-toto statement (a message signature is no attestation)")
		}
		st, err := statementOf(res.Statement)
		if err != nil {
			return nil, Identity{}, err
		}
		if st.PredicateType != predicateType {
			return nil, Identity{}, fmt.Errorf("the attestation by %s has predicate type %s, not %s", v.names[i], st.PredicateType, predicateType)
		}
		return st, v.names[i], nil
	}
	return nil, Identity{}, fmt.Errorf("keyless attestation refused: %s", strings.Join(why, "; "))
}

// artifactDigest is the policy that the statement's subject is d.
func artifactDigest(d digest.Digest) (verify.ArtifactPolicyOption, error) {
	if err := d.Validate(); err != nil || d.Algorithm() != digest.SHA256 {
		return nil, fmt.Errorf("subject %q is not a sha256 digest", d)
	}
	raw, err := hexBytes(d.Encoded())
	if err != nil {
		return nil, err
	}
	return verify.WithArtifactDigest("sha256", raw), nil
}

// statementOf is the in-toto statement sigstore-go verified, as
// attest.Statement: read from that statement itself, never from a second
// decode of the envelope's payload (two JSON decoders can disagree on
// one payload: encoding/json matches keys regardless of case and takes
// the last of duplicates).
func statementOf(verified *intoto.Statement) (*attest.Statement, error) {
	body, err := protojson.Marshal(verified)
	if err != nil {
		return nil, fmt.Errorf("the verified statement: %w", err)
	}
	var st attest.Statement
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("not an in-toto statement: %w", err)
	}
	if st.Type != attest.StatementType && st.Type != "https://in-toto.io/Statement/v0.1" {
		return nil, fmt.Errorf("statement type %q is not %s", st.Type, attest.StatementType)
	}
	return &st, nil
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// errTooLarge is a bundle over oci.MaxSmallFile.
var errTooLarge = fmt.Errorf("a Sigstore bundle is larger than %d bytes", oci.MaxSmallFile)
