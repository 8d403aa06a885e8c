// This file transcribes, for tests only, the two places where OpenTofu
// v1.12.6 reads a SHA256SUMS file (internal/getproviders/
// package_authentication.go: matchingChecksumAuthentication and
// signatureAuthentication.acceptableHashes), so that fuzzing can compare
// this package's decisions with OpenTofu's own logic on any input.
// The transcribed code is from OpenTofu, Copyright (c) The OpenTofu Authors
// and HashiCorp, Inc., under the Mozilla Public License 2.0.

package sha256sums_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// tofuVerdict is what OpenTofu makes of a SHA256SUMS file when installing
// the package name whose sha256 is want (the signature being good).
type tofuVerdict struct {
	installs bool
	// signedHashes is false when OpenTofu drops the file's hashes (the
	// install is "verified checksum", not "signed").
	signedHashes bool
	reason       string
}

// tofuInstall runs both of OpenTofu's readers in the order OpenTofu runs
// them (the checksum match first, the signed hashes after the signature
// check), turning a panic into a refusal as a crash refuses the install.
func tofuInstall(document []byte, name string, want [sha256.Size]byte) (v tofuVerdict) {
	defer func() {
		if r := recover(); r != nil {
			v = tofuVerdict{reason: fmt.Sprintf("panic: %v", r)}
		}
	}()
	if err := tofuMatchingChecksum(document, name, want); err != nil {
		return tofuVerdict{reason: err.Error()}
	}
	hashes := tofuAcceptableHashes(document)
	return tofuVerdict{installs: true, signedHashes: hashes != nil}
}

// tofuMatchingChecksum is matchingChecksumAuthentication.AuthenticatePackage.
func tofuMatchingChecksum(document []byte, filename string, wantSHA256Sum [sha256.Size]byte) error {
	var checksum []byte
	for _, line := range bytes.Split(document, []byte("\n")) {
		parts := bytes.Fields(line)
		if len(parts) > 1 && bytes.Equal(parts[1], []byte(filename)) {
			checksum = parts[0]
			break
		}
	}
	if checksum == nil {
		return fmt.Errorf("checksum list has no SHA-256 hash for %q", filename)
	}
	var gotSHA256Sum [sha256.Size]byte
	if _, err := hex.Decode(gotSHA256Sum[:], checksum); err != nil {
		return fmt.Errorf("checksum list has invalid SHA256 hash %q: %w", string(checksum), err)
	}
	if !bytes.Equal(gotSHA256Sum[:], wantSHA256Sum[:]) {
		return fmt.Errorf("checksum list has unexpected SHA-256 hash %x (expected %x)", gotSHA256Sum, wantSHA256Sum[:])
	}
	return nil
}

// tofuAcceptableHashes is signatureAuthentication.acceptableHashes.
func tofuAcceptableHashes(document []byte) []string {
	var ret []string
	sc := bufio.NewScanner(bytes.NewReader(document))
	for sc.Scan() {
		parts := bytes.Fields(sc.Bytes())
		if len(parts) != 0 && len(parts) < 2 {
			return nil
		}
		hashStr := parts[0]
		if len(hashStr) != 64 {
			return nil
		}
		var gotSHA256Sum [sha256.Size]byte
		if _, err := hex.Decode(gotSHA256Sum[:], hashStr); err != nil {
			return nil
		}
		ret = append(ret, "zh:"+hex.EncodeToString(gotSHA256Sum[:]))
	}
	return ret
}
