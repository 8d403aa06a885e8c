package main

import (
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
)

// requireAttestationFlag is serve's admission rule (docs/proxy.md,
// "Serving only attested releases").
func requireAttestationFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "require-attestation", Usage: "serve only provider releases whose index has an attestation (push provider --attest-key) verifying with this public key `FILE` (PEM, ECDSA P-256 or Ed25519; repeatable: any of them)", EnvVars: []string{"OCI_TOFU_REQUIRE_ATTESTATION"}}
}

// readRequireAttestation reads --require-attestation's keys, refusing a
// file that is not a usable public key, and refuses pull-through beside
// it: releases pulled through are stored without attestations.
func readRequireAttestation(c *cli.Context, opts *proxy.Options) error {
	files := c.StringSlice("require-attestation")
	if len(files) == 0 {
		return nil
	}
	if opts.PullThrough != nil {
		return fmt.Errorf("--require-attestation cannot be combined with --pull-through-origin or --pull-through-tofu-api-url: releases pulled through are stored without attestations, so none of them could be served")
	}
	for _, f := range files {
		v, err := attest.LoadVerifier(f)
		if err != nil {
			return fmt.Errorf("--require-attestation: %w", err)
		}
		opts.RequireAttestation = append(opts.RequireAttestation, v)
	}
	return nil
}

// warnUnattestedKinds says that modules and OpenTofu releases, which push
// does not attest yet, are served without the check.
func warnUnattestedKinds(opts proxy.Options, logger *slog.Logger) {
	if len(opts.RequireAttestation) == 0 || (opts.ModuleTemplate == nil && opts.TofuRepository == nil) {
		return
	}
	logger.Warn("--require-attestation applies to providers only: modules and OpenTofu releases are served without it (see docs/proxy.md)")
}
