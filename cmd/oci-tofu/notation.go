//go:build !nonotation

package main

import (
	"context"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/attest/notation"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
)

// loadNotation reads a notation configuration directory (trust store and
// trust policy) for --require-notation. Built without it (-tags
// nonotation, notation_off.go), the flag is refused.
func loadNotation(dir string) (attest.Trust, error) {
	return notation.Load(dir)
}

// A policy's notation:DIR signers are read the same way.
func init() {
	policy.SetNotationLoader(func(dir string) (policy.RegistryCheck, error) {
		t, err := notation.Load(dir)
		if err != nil {
			return nil, err
		}
		return notationSigner{t}, nil
	})
}

// notationSigner is policy.RegistryCheck over a notation trust.
type notationSigner struct{ t *notation.Trust }

func (n notationSigner) Check(ctx context.Context, repo oci.ReadOnlyRepository, repository string, subject digest.Digest, _ string) (error, error) {
	return n.t.Check(ctx, repo, repository, subject)
}
