package main

import (
	"fmt"
	"os"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/lint"
	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/convert/report"
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

// keyAttester is --attest-key's attester, each attestation told to
// log: nil when it is not given.
func keyAttester(c *cli.Context, log func(format string, args ...any)) (*publish.KeyAttester, error) {
	s, err := attestSigner(c)
	if err != nil || s == nil {
		return nil, err
	}
	return &publish.KeyAttester{Signer: s, Version: version, Log: log}, nil
}

// attestPushed signs subject, just pushed to ref's repository, and writes
// the attestation of predicate, reporting the tags written.
func attestPushed(c *cli.Context, rep *report.Reporter, repo oci.Repository, ref oci.Reference, subject digest.Digest, s *attest.Signer, predicateType string, predicate any) error {
	k := publish.KeyAttester{Signer: s, Log: rep.Infof}
	return k.AttachPushed(c.Context, repo, ref.Name(), subject, predicateType, predicate)
}

// attestTime is when the attestation says the release was verified.
func attestTime() time.Time { return time.Now().UTC().Truncate(time.Second) }

// ingestAttestation is what mirror and serve's pull-through attest with:
// nil without --attest-key.
func ingestAttestation(c *cli.Context, log func(format string, args ...any)) (*ingest.Attestation, error) {
	k, err := keyAttester(c, log)
	if err != nil || k == nil {
		return nil, err
	}
	return &ingest.Attestation{Attester: *k, Version: version}, nil
}
