//go:build nonotation

package main

import (
	"errors"

	"github.com/oci-tofu/oci-tofu/convert/attest"
)

// loadNotation refuses: this binary was built without Notation support
// (-tags nonotation), which leaves notation-go out.
func loadNotation(string) (attest.Trust, error) {
	return nil, errors.New("this oci-tofu was built without Notation support (-tags nonotation)")
}
