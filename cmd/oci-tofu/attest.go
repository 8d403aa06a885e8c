package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/lint"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
)

func attestKeyFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "attest-key",
		Usage:   "PEM private key `FILE` (ECDSA P-256, Ed25519, or cosign's encrypted key with COSIGN_PASSWORD) to sign what was pushed (the index or manifest the tag names) and attest what was verified, as cosign stores them: Sigstore bundles as OCI 1.1 referrers of it (cosign v3's form, which oras cp -r copies) and sha256-<hex>.sig/.att tags (cosign v2's)",
		EnvVars: []string{"OCI_TOFU_ATTEST_KEY"},
	}
}

func attestPubFlag() cli.Flag {
	return &cli.StringSliceFlag{
		Name:    "attest-pub",
		Usage:   "PEM public key `FILE` (cosign.pub; ECDSA P-256 or Ed25519) that must have signed and attested every artifact checked, or, written keyless:ISSUER=IDENTITY, an OIDC issuer and certificate identity that must have attested it keylessly (a Sigstore bundle, checked against --trusted-root) (repeatable: each must have)",
		EnvVars: []string{"OCI_TOFU_ATTEST_PUB"},
	}
}

// attestPublicKeys loads each --attest-pub that is a key file (the
// keyless:… ones are verifyKeyless's).
func attestPublicKeys(c *cli.Context) ([]lint.AttestKey, error) {
	var keys []lint.AttestKey
	files, _ := splitKeyless(c.StringSlice("attest-pub"))
	for _, f := range files {
		v, err := attest.LoadVerifier(f)
		if err != nil {
			return nil, fmt.Errorf("--attest-pub: %w", err)
		}
		keys = append(keys, lint.AttestKey{Name: f, Key: v})
	}
	return keys, nil
}

// notationTrusts loads each notation configuration directory a flag
// names (notation.go: loadNotation).
func notationTrusts(c *cli.Context, flag string) ([]attest.Checker, error) {
	var out []attest.Checker
	for _, dir := range c.StringSlice(flag) {
		t, err := loadNotation(dir)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flag, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// attestSigner loads --attest-key, nil when it is not given.
func attestSigner(c *cli.Context) (*attest.Signer, error) {
	f := c.String("attest-key")
	if f == "" {
		return nil, nil
	}
	return attest.LoadSigner(f, []byte(os.Getenv("COSIGN_PASSWORD")))
}

// attestPushed signs subject, just pushed to ref's repository, and writes
// the attestation of predicate, reporting the tags written.
func attestPushed(c *cli.Context, rep *reporter, repo oci.Repository, ref oci.Reference, subject digest.Digest, s *attest.Signer, predicateType string, predicate any) error {
	a, err := attest.Attach(c.Context, repo, ref.Name(), subject, s, predicateType, predicate)
	if err != nil {
		return fmt.Errorf("%s@%s was pushed, but signing it failed: %w", ref.Name(), subject, err)
	}
	reportAttached(rep, subject, a, predicateType)
	return nil
}

// reportAttached says what Attach wrote: the tag-schema tags and the
// referrers.
func reportAttached(rep *reporter, subject digest.Digest, a attest.Attached, predicateType string) {
	rep.infof("signed %s (%s%s) and attested it (%s%s, %s)", subject, a.SignatureTag, referrerNote(a.SignatureReferrer), a.AttestationTag, referrerNote(a.AttestationReferrer), predicateType)
}

// referrerNote names a referrer, when there is one.
func referrerNote(d digest.Digest) string {
	if d == "" {
		return ""
	}
	return ", referrer " + d.String()
}

// attestTime is when the attestation says the release was verified.
func attestTime() time.Time { return time.Now().UTC().Truncate(time.Second) }

// keyAttester is ingest's Attester for --attest-key: attest.Attach with
// the key, each attestation told to log.
type keyAttester struct {
	s   *attest.Signer
	log func(format string, args ...any)
}

func (a keyAttester) Attest(ctx context.Context, repo oci.Repository, repository string, root digest.Digest, predicateType string, predicate any) error {
	at, err := attest.Attach(ctx, repo, repository, root, a.s, predicateType, predicate)
	if err == nil {
		a.log("signed %s@%s (%s%s) and attested it (%s%s, %s)", repository, root, at.SignatureTag, referrerNote(at.SignatureReferrer), at.AttestationTag, referrerNote(at.AttestationReferrer), predicateType)
	}
	return err
}

func (a keyAttester) AttestOnly(ctx context.Context, repo oci.Repository, repository string, subject digest.Digest, predicateType string, predicate any) error {
	at, err := attest.AttachAttestation(ctx, repo, repository, subject, a.s, predicateType, predicate)
	if err == nil {
		a.log("attested %s@%s (%s%s, %s)", repository, subject, at.AttestationTag, referrerNote(at.AttestationReferrer), predicateType)
	}
	return err
}

func (a keyAttester) Key() *attest.Verifier { return a.s.Public() }

// ingestAttestation is what mirror and serve's pull-through attest with:
// nil without --attest-key.
func ingestAttestation(c *cli.Context, log func(format string, args ...any)) (*ingest.Attestation, error) {
	s, err := attestSigner(c)
	if err != nil || s == nil {
		return nil, err
	}
	return &ingest.Attestation{Attester: keyAttester{s: s, log: log}, Version: version}, nil
}
