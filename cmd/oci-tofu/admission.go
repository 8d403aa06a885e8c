package main

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
)

// requireAttestationFlag is serve's admission rule (docs/proxy.md,
// "Serving only attested releases").
func requireAttestationFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "require-attestation", Usage: "serve only releases (providers, modules, OpenTofu) whose root has an attestation (push --attest-key) verifying with this public key `FILE` (PEM, ECDSA P-256 or Ed25519), or, written keyless:ISSUER=IDENTITY, a keyless attestation (cosign's Sigstore bundle) by that OIDC issuer and certificate identity, checked against --trusted-root (repeatable: any of them)", EnvVars: []string{"OCI_TOFU_REQUIRE_ATTESTATION"}}
}

// trustedRootFlag is the offline Sigstore trusted root keyless
// attestations are checked against.
func trustedRootFlag() cli.Flag {
	return &cli.StringFlag{Name: "trusted-root", Usage: "Sigstore trusted root `FILE` (trusted_root.json: Fulcio CAs, Rekor logs, timestamp authorities, CT logs) against which --require-attestation keyless:… attestations are checked, offline", EnvVars: []string{"OCI_TOFU_TRUSTED_ROOT"}}
}

// requireNotationFlag admits releases signed with Notation (docs/proxy.md,
// "Serving only attested releases").
func requireNotationFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "require-notation", Usage: "serve only releases whose root carries a Notary Project signature (notation sign) that passes the trust policy and trust store of this notation configuration `DIR` (trustpolicy.oci.json or trustpolicy.json, truststore/x509/…; repeatable; with --require-attestation, any key or policy admits a release)", EnvVars: []string{"OCI_TOFU_REQUIRE_NOTATION"}}
}

// serveAttestKeyFlag is the key pull-through attests what it stores with.
func serveAttestKeyFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    "attest-key",
		Usage:   "PEM private key `FILE` (ECDSA P-256, Ed25519, or cosign's encrypted key with COSIGN_PASSWORD) with which pull-through signs and attests each release it stores, as mirror --attest-key does",
		EnvVars: []string{"OCI_TOFU_ATTEST_KEY"},
	}
}

// readRequireAttestation reads --attest-key (pull-through's attester) and
// --require-attestation's keys, refusing a file that is not a usable key,
// --attest-key without pull-through, and pull-through beside
// --require-attestation unless it attests with one of the required keys.
func readRequireAttestation(c *cli.Context, opts *proxy.Options, logger *slog.Logger) error {
	att, err := readPullThroughAttester(c, opts, logger)
	if err != nil {
		return err
	}
	if opts.RequireTrust, err = notationTrusts(c, "require-notation"); err != nil {
		return err
	}
	files := c.StringSlice("require-attestation")
	if len(files) == 0 {
		if c.String("trusted-root") != "" {
			return fmt.Errorf("--trusted-root is for --require-attestation keyless:ISSUER=IDENTITY: give one")
		}
		if len(opts.RequireTrust) > 0 && opts.PullThrough != nil {
			return fmt.Errorf("--require-notation with pull-through needs --require-attestation with the key of --attest-key: releases pulled through carry no Notation signature, so none of them could be served")
		}
		return nil
	}
	if opts.PullThrough != nil && att == nil {
		return fmt.Errorf("--require-attestation with --pull-through-origin or --pull-through-tofu-api-url needs --attest-key: releases pulled through would be stored without attestations, so none of them could be served")
	}
	files, identities := splitKeyless(files)
	if err := readKeyless(c.String("trusted-root"), identities, opts); err != nil { // keyless.go
		return err
	}
	for _, f := range files {
		v, err := attest.LoadVerifier(f)
		if err != nil {
			return fmt.Errorf("--require-attestation: %w", err)
		}
		opts.RequireAttestation = append(opts.RequireAttestation, v)
	}
	if att != nil && !slices.ContainsFunc(opts.RequireAttestation, att.Attester.Key().Equal) {
		return fmt.Errorf("--attest-key's public key is not among --require-attestation's keys: the releases pull-through stores would carry attestations none of them verifies, so none could be served (add the public key of --attest-key to --require-attestation)")
	}
	return nil
}

// readPullThroughAttester reads --attest-key, the key pull-through attests
// what it stores with (nil without it), into opts.PullThrough.
func readPullThroughAttester(c *cli.Context, opts *proxy.Options, logger *slog.Logger) (*ingest.Attestation, error) {
	att, err := ingestAttestation(c, func(format string, args ...any) { logger.Info("pull-through: " + fmt.Sprintf(format, args...)) })
	if err != nil {
		return nil, fmt.Errorf("--attest-key: %w", err)
	}
	if att != nil {
		if opts.PullThrough == nil {
			return nil, fmt.Errorf("--attest-key signs and attests the releases pull-through stores: it needs --pull-through-origin or --pull-through-tofu-api-url")
		}
		opts.PullThrough.Attest = att
	}
	return att, nil
}

// keylessPrefix marks a --require-attestation value that is a keyless
// identity, not a key file.
const keylessPrefix = "keyless:"

// verifyTrustedRootFlag is trustedRootFlag for verify's --attest-pub.
func verifyTrustedRootFlag() cli.Flag {
	return &cli.StringFlag{Name: "trusted-root", Usage: "Sigstore trusted root `FILE` (trusted_root.json) against which --attest-pub keyless:… attestations are checked, offline", EnvVars: []string{"OCI_TOFU_TRUSTED_ROOT"}}
}

// splitKeyless separates --require-attestation's key files from its
// keyless identities (without their prefix).
func splitKeyless(values []string) (files, identities []string) {
	for _, v := range values {
		if id, ok := strings.CutPrefix(v, keylessPrefix); ok {
			identities = append(identities, id)
		} else {
			files = append(files, v)
		}
	}
	return files, identities
}
