package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// GnuPG runs the gpg binary (GnuPG, the OpenPGP implementation provider
// publishers really use) with a home directory of its own, so tests make
// keys and signatures the way publishers do. Times are faked with
// --faked-system-time, so keys can be made already expired.
type GnuPG struct {
	Home string
	path string
}

// NewGnuPG returns GnuPG with an empty home directory. The test fails (it is
// not skipped) when gpg is missing: `make tools-apt` installs it.
func NewGnuPG(t testing.TB) *GnuPG {
	t.Helper()
	g, err := newGnuPG()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.close)
	return g
}

func newGnuPG() (*GnuPG, error) {
	path, err := exec.LookPath("gpg")
	if err != nil {
		return nil, fmt.Errorf("gpg (GnuPG) is not installed: run `make tools-apt`: %w", err)
	}
	// A short path: gpg-agent's socket lives in the home directory, and
	// socket paths are limited to about 100 bytes.
	home, err := os.MkdirTemp("", "gpg-")
	if err != nil {
		return nil, err
	}
	return &GnuPG{Home: home, path: path}, nil
}

// close stops the gpg-agent this home started and removes the home.
func (g *GnuPG) close() {
	if conf, err := exec.LookPath("gpgconf"); err == nil {
		cmd := exec.Command(conf, "--kill", "gpg-agent")
		cmd.Env = g.env()
		cmd.Run()
	}
	os.RemoveAll(g.Home)
}

func (g *GnuPG) env() []string {
	return append(os.Environ(), "GNUPGHOME="+g.Home, "TZ=UTC")
}

// run runs gpg in batch mode at time at (the real time when zero).
func (g *GnuPG) run(at time.Time, stdin []byte, args ...string) ([]byte, error) {
	base := []string{"--batch", "--yes", "--quiet", "--no-tty", "--passphrase", "", "--pinentry-mode", "loopback"}
	if !at.IsZero() {
		base = append(base, "--faked-system-time", at.UTC().Format("20060102T150405")+"!")
	}
	cmd := exec.Command(g.path, append(base, args...)...)
	cmd.Env = g.env()
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("gpg %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// Expiry is how long a key or signature lives in GnuPG's syntax: "never",
// "1d", "seconds=30".
type Expiry = string

// Never is an expiry that never comes.
const Never Expiry = "never"

// ExpireIn is an expiry d after creation, to the second.
func ExpireIn(d time.Duration) Expiry { return fmt.Sprintf("seconds=%d", int64(d/time.Second)) }

// GenKey makes a primary key with one user id, created at at, and returns
// its fingerprint. algo is GnuPG's name ("ed25519", "rsa2048", "dsa2048");
// usage is "sign", "cert" or "sign,cert".
func (g *GnuPG) GenKey(uid, algo, usage string, expire Expiry, at time.Time) (string, error) {
	if _, err := g.run(at, nil, "--quick-gen-key", uid, algo, usage, expire); err != nil {
		return "", err
	}
	fprs, err := g.fingerprints(uid)
	if err != nil {
		return "", err
	}
	return fprs[0], nil
}

// AddSubkey adds a subkey to the key with fingerprint primary and returns
// the subkey's fingerprint.
func (g *GnuPG) AddSubkey(primary, algo, usage string, expire Expiry, at time.Time) (string, error) {
	if _, err := g.run(at, nil, "--quick-add-key", primary, algo, usage, expire); err != nil {
		return "", err
	}
	fprs, err := g.fingerprints(primary)
	if err != nil {
		return "", err
	}
	return fprs[len(fprs)-1], nil
}

// fingerprints lists a key's primary and subkey fingerprints, in order.
func (g *GnuPG) fingerprints(key string) ([]string, error) {
	out, err := g.run(time.Time{}, nil, "--with-colons", "--fingerprint", "--list-keys", key)
	if err != nil {
		return nil, err
	}
	var fprs []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Split(line, ":"); len(f) > 9 && f[0] == "fpr" {
			fprs = append(fprs, f[9])
		}
	}
	if len(fprs) == 0 {
		return nil, fmt.Errorf("gpg lists no key %q", key)
	}
	return fprs, nil
}

// Revoke imports the revocation certificate GnuPG made when it generated
// the key: the key is revoked from then on, as a publisher revokes a
// compromised key.
func (g *GnuPG) Revoke(fpr string) error {
	cert, err := os.ReadFile(filepath.Join(g.Home, "openpgp-revocs.d", fpr+".rev"))
	if err != nil {
		return err
	}
	// GnuPG protects the stored certificate with a leading ':'.
	cert = bytes.ReplaceAll(cert, []byte(":-----BEGIN PGP PUBLIC KEY BLOCK-----"), []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----"))
	_, err = g.run(time.Time{}, cert, "--import")
	return err
}

// SignOptions shape a detached signature.
type SignOptions struct {
	// At dates the signature (the real time when zero).
	At time.Time
	// Armor makes an ASCII-armored signature instead of a binary one.
	Armor bool
	// Expire gives the signature an expiry ("" or Never for none).
	Expire Expiry
}

// DetachSign signs data with the key or subkey whose fingerprint is signer
// (a subkey is used exactly, as with gpg's "FPR!").
func (g *GnuPG) DetachSign(signer string, data []byte, opts SignOptions) ([]byte, error) {
	args := []string{"--local-user", signer + "!", "--detach-sign", "--output", "-"}
	if opts.Armor {
		args = append(args, "--armor")
	}
	if opts.Expire != "" && opts.Expire != Never {
		args = append(args, "--default-sig-expire", opts.Expire)
	}
	return g.run(opts.At, data, args...)
}

// ExportPublic returns the armored public key (with its subkeys and any
// revocation) that verifiers are given.
func (g *GnuPG) ExportPublic(fpr string) ([]byte, error) {
	return g.run(time.Time{}, nil, "--armor", "--export", fpr)
}
