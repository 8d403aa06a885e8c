package main

import (
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
)

// enforceExpirationFlag mirrors OpenTofu's OPENTOFU_ENFORCE_GPG_EXPIRATION.
// The variable is read as OpenTofu reads it (only "true" enforces), not as
// urfave/cli reads boolean variables, so it is not the flag's EnvVars.
func enforceExpirationFlag() cli.Flag {
	return &cli.BoolFlag{
		Name: "enforce-gpg-expiration",
		Usage: "refuse releases signed by an expired key, subkey or signature, as OpenTofu does with " +
			pgp.EnforceExpirationEnv + "=true (also honoured); by default they are accepted with a warning, as OpenTofu 1.12 installs them",
	}
}

// enforceExpiration reports whether the flag or OpenTofu's variable asks
// for expired signatures to be refused.
func enforceExpiration(c *cli.Context) bool {
	return c.Bool("enforce-gpg-expiration") || pgp.EnforceExpirationFromEnv()
}

// loadKeyrings reads armored public key files.
func loadKeyrings(files []string) ([]*pgp.Keyring, error) {
	var keys []*pgp.Keyring
	for _, f := range files {
		kr, err := pgp.LoadKeyring(f)
		if err != nil {
			return nil, err
		}
		keys = append(keys, kr)
	}
	return keys, nil
}

// tofuKeyrings are the keys OpenTofu releases are checked with: the key
// files given, or OpenTofu's own signing key.
func tofuKeyrings(files []string) ([]*pgp.Keyring, error) {
	if len(files) > 0 {
		return loadKeyrings(files)
	}
	kr, err := release.OpenTofuSigningKey()
	if err != nil {
		return nil, err
	}
	return []*pgp.Keyring{kr}, nil
}
