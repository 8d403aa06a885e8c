//go:build !nonotation

package main

import (
	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/attest/notation"
	"github.com/oci-tofu/oci-tofu/convert/policy"
)

// loadNotation reads a notation configuration directory (trust store and
// trust policy) for --require-notation. Built without it (-tags
// nonotation, notation_off.go), the flag is refused.
func loadNotation(dir string) (attest.Checker, error) {
	t, err := notation.Load(dir)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// A policy's notation:DIR signers are read the same way.
func init() {
	policy.SetNotationLoader(func(dir string) (attest.Checker, error) { return loadNotation(dir) })
}
