package servercreds

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
)

// Bounds on the secret files.
const (
	// MaxTokenFile bounds a client token file.
	MaxTokenFile = 1 << 20
	// MaxURLSigningKeyFile bounds a URL signing key file.
	MaxURLSigningKeyFile = 4096
	// MinTokenLength and MinURLSigningKey are the shortest client token
	// (characters) and URL signing key (bytes) accepted.
	MinTokenLength   = 16
	MinURLSigningKey = 16
)

// ReadTokens reads client bearer tokens, one per line; blank lines and
// lines starting with # are skipped. Every token has at least
// MinTokenLength characters, and there is at least one.
func ReadTokens(path string) ([]string, error) {
	b, err := localfile.ReadBounded(path, MaxTokenFile)
	if err != nil {
		return nil, err
	}
	var tokens []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(line) < MinTokenLength {
			return nil, fmt.Errorf("%s: tokens must have at least %d characters", path, MinTokenLength)
		}
		tokens = append(tokens, line)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%s holds no token", path)
	}
	return tokens, nil
}

// ReadURLSigningKey reads the HMAC key archive URLs are signed with,
// without surrounding white space: at least MinURLSigningKey bytes.
func ReadURLSigningKey(path string) ([]byte, error) {
	key, err := localfile.ReadBounded(path, MaxURLSigningKeyFile)
	if err != nil {
		return nil, err
	}
	if key = bytes.TrimSpace(key); len(key) < MinURLSigningKey {
		return nil, fmt.Errorf("%s: the URL signing key must have at least %d bytes", path, MinURLSigningKey)
	}
	return key, nil
}

// ReadNotificationsSecret reads the secret registries' notifications
// carry (serve --notifications-secret-file): at least MinURLSigningKey
// bytes, surrounding white space trimmed, no white space or control
// characters inside (it goes into an HTTP header).
func ReadNotificationsSecret(path string) ([]byte, error) {
	secret, err := localfile.ReadBounded(path, MaxURLSigningKeyFile)
	if err != nil {
		return nil, err
	}
	secret = bytes.TrimSpace(secret)
	if len(secret) < MinURLSigningKey {
		return nil, fmt.Errorf("%s: the notifications secret must have at least %d bytes", path, MinURLSigningKey)
	}
	for _, b := range secret {
		if b <= ' ' || b == 0x7f {
			return nil, fmt.Errorf("%s: the notifications secret holds white space or a control character", path)
		}
	}
	return secret, nil
}
