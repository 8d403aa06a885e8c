package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strconv"
)

// The image's paths and its user: the same as distroless's "nonroot", so
// volumes and security contexts written for that image fit this one.
const (
	binaryPath   = "/usr/local/bin/oci-tofu"
	caBundlePath = "/etc/ssl/certs/ca-certificates.crt"
	userName     = "nonroot"
	userID       = 65532
	userHome     = "/home/nonroot"
)

// maxCABundle bounds a CA bundle given with --ca-bundle (Debian's is
// about 200 KiB).
const maxCABundle = 4 << 20

// baseFiles are the files every platform shares (one layer, one blob):
// the account databases, the CA bundle, the non-root user's home and a
// world-writable /tmp with the sticky bit.
func baseFiles(caBundle []byte) []file {
	return []file{
		rootFile("etc/passwd", 0o644, []byte(passwd())),
		rootFile("etc/group", 0o644, []byte(group())),
		rootFile(caBundlePath[1:], 0o644, caBundle),
		dir("root", 0o700, 0, 0),
		dir(userHome[1:], 0o700, userID, userID),
		dir("tmp", 0o777|os.ModeSticky, 0, 0),
	}
}

// binaryFiles is the layer that differs per platform: the static binary.
func binaryFiles(binary []byte) []file {
	return []file{rootFile(binaryPath[1:], 0o755, binary)}
}

// passwd is /etc/passwd: root, and the user the image runs as. Neither
// has a login shell (there is none in the image).
func passwd() string {
	return "root:x:0:0:root:/root:/sbin/nologin\n" +
		fmt.Sprintf("%s:x:%d:%d:%s:%s:/sbin/nologin\n", userName, userID, userID, userName, userHome)
}

// group is /etc/group, matching passwd.
func group() string {
	return "root:x:0:\n" + fmt.Sprintf("%s:x:%d:\n", userName, userID)
}

// imageUser is the config's User: numeric, so runtimes can check
// runAsNonRoot without reading /etc/passwd.
func imageUser() string {
	id := strconv.Itoa(userID)
	return id + ":" + id
}

// readCABundle reads a CA bundle given with --ca-bundle and checks that
// it holds certificates.
func readCABundle(path string) ([]byte, error) {
	b, err := readBounded(path, maxCABundle)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w", err)
	}
	if countCertificates(b) == 0 {
		return nil, fmt.Errorf("CA bundle %s holds no PEM certificate", path)
	}
	return b, nil
}

// countCertificates counts the PEM blocks of b that parse as X.509
// certificates.
func countCertificates(b []byte) int {
	count := 0
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return count
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err == nil {
			count++
		}
	}
}
