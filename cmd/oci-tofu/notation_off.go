//go:build nonotation

package main

import (
	"errors"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/policy"
)

// errNoNotation says this binary was built without Notation support
// (-tags nonotation), which leaves notation-go out.
var errNoNotation = errors.New("this oci-tofu was built without Notation support (-tags nonotation)")

// loadNotation refuses --require-notation.
func loadNotation(string) (attest.Checker, error) { return nil, errNoNotation }

// A policy's notation:DIR signers are refused alike.
func init() {
	policy.SetNotationLoader(func(string) (attest.Checker, error) {
		return nil, errors.New("this oci-tofu was built without Notation support (-tags nonotation): notation: signers are not available")
	})
}
