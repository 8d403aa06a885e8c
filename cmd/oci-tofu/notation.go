//go:build !nonotation

package main

import (
	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/attest/notation"
)

// loadNotation reads a notation configuration directory (trust store and
// trust policy) for --require-notation. Built without it (-tags
// nonotation, notation_off.go), the flag is refused.
func loadNotation(dir string) (attest.Trust, error) {
	return notation.Load(dir)
}
