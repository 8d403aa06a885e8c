package main

import (
	"fmt"
	"os"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/lint"
	"github.com/oci-tofu/oci-tofu/oci"
)

func attestKeyFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "attest-key",
		Usage:   "PEM private key `FILE` (ECDSA P-256, Ed25519, or cosign's encrypted key with COSIGN_PASSWORD) to sign what was pushed (the index or manifest the tag names) and attest what was verified, as cosign stores them (sha256-<hex>.sig/.att tags)",
		EnvVars: []string{"OCI_TOFU_ATTEST_KEY"},
	}
}

func attestPubFlag() cli.Flag {
	return &cli.StringSliceFlag{
		Name:    "attest-pub",
		Usage:   "PEM public key `FILE` (cosign.pub; ECDSA P-256 or Ed25519) that must have signed and attested every artifact checked (repeatable: each key must have)",
		EnvVars: []string{"OCI_TOFU_ATTEST_PUB"},
	}
}

// attestPublicKeys loads each --attest-pub.
func attestPublicKeys(c *cli.Context) ([]lint.AttestKey, error) {
	var keys []lint.AttestKey
	for _, f := range c.StringSlice("attest-pub") {
		v, err := attest.LoadVerifier(f)
		if err != nil {
			return nil, fmt.Errorf("--attest-pub: %w", err)
		}
		keys = append(keys, lint.AttestKey{Name: f, Key: v})
	}
	return keys, nil
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
	rep.infof("signed %s (%s) and attested it (%s, %s)", subject, a.SignatureTag, a.AttestationTag, predicateType)
	return nil
}

// attestTime is when the attestation says the release was verified.
func attestTime() time.Time { return time.Now().UTC().Truncate(time.Second) }
