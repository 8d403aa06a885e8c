package main

import (
	"bytes"
	"encoding/pem"
	"fmt"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// pinnedCABundle is the image's CA bundle: Mozilla's root store (NSS) as
// golang.org/x/crypto/x509roots/fallback embeds it, at the version go.mod
// pins, written as PEM in the package's order. It is the same on every
// build machine and holds none of the machine's own CAs.
//
// Roots that carry a constraint (NSS's "distrust after" date for
// certificates they issue) are left out: a PEM bundle cannot carry the
// constraint, and without it such a root would be trusted beyond the
// date Mozilla set.
func pinnedCABundle() ([]byte, error) {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
	}
	if countCertificates(buf.Bytes()) == 0 {
		return nil, fmt.Errorf("the pinned CA bundle holds no certificate")
	}
	return buf.Bytes(), nil
}

// caBundle is the bundle the image ships: the pinned one, or the file
// --ca-bundle names.
func caBundle(path string) ([]byte, error) {
	if path == "" {
		return pinnedCABundle()
	}
	return readCABundle(path)
}
