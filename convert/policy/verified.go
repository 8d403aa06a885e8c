package policy

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
)

// Signers whose signatures are verified by code outside this package: a
// Notary Project trust policy (notation:DIR) and a keyless Sigstore
// identity (keyless:ISSUER=IDENTITY). Their verifiers (notation-go,
// sigstore-go) are large and each can be left out of a build (the
// nonotation and nokeyless tags), so the command supplies them
// (SetNotationLoader, SetKeylessLoader) — the same ones serve's
// --require-notation and --require-attestation keyless:… use — and this
// package parses, names and keeps them.
const (
	// SignerNotation: the release's root carries a Notary Project
	// signature the trust policy and trust store of a notation
	// configuration directory accept.
	SignerNotation = "notation"
	// SignerKeyless: the release's root carries a keyless Sigstore bundle
	// attestation (of its kind's predicate type) by an OIDC issuer and
	// certificate identity, checked against the file's trusted_root.
	SignerKeyless = "keyless"
)

// NotationLoader reads a notation configuration directory (trust policy
// and trust store).
type NotationLoader func(dir string) (attest.Checker, error)

// KeylessLoader reads a Sigstore trusted root file for one identity
// (ISSUER=IDENTITY). Its check also verifies one Sigstore bundle as that
// identity's attestation: a keyless signer is trusted for the ingest time
// min_age counts from (Policy.IngestTrust).
type KeylessLoader func(trustedRoot, identity string) (attest.BundleChecker, error)

var loaders struct {
	sync.RWMutex
	notation NotationLoader
	keyless  KeylessLoader
}

// SetNotationLoader installs the loader of notation: signers (the
// command does, at start; a loader returning an error for every
// directory says the build has none).
func SetNotationLoader(l NotationLoader) {
	loaders.Lock()
	defer loaders.Unlock()
	loaders.notation = l
}

// SetKeylessLoader installs the loader of keyless: signers.
func SetKeylessLoader(l KeylessLoader) {
	loaders.Lock()
	defer loaders.Unlock()
	loaders.keyless = l
}

// parseEnv is what signers are read with: the policy file's directory
// (relative paths), its trusted_root, and the checks loaded so far (one
// per entry, however many rules name it).
type parseEnv struct {
	dir         string
	trustedRoot string // resolved path; "" when the file has none
	checks      map[string]attest.Checker
}

func newParseEnv(filename string) *parseEnv {
	return &parseEnv{dir: filepath.Dir(filename), checks: map[string]attest.Checker{}}
}

// path resolves a file the policy names relative to its directory.
func (e *parseEnv) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(e.dir, p)
}

// parseTrustedRoot reads the top-level trusted_root attribute: the
// Sigstore trusted_root.json keyless: signers are checked against.
func (e *parseEnv) parseTrustedRoot(a *hcl.Attribute) error {
	var file string
	if err := decode(a, &file); err != nil {
		return err
	}
	if file == "" {
		return posError(a.Expr.Range(), "trusted_root must name a file (a Sigstore trusted_root.json)")
	}
	e.trustedRoot = e.path(file)
	return nil
}

// registryCheck loads the check of a notation: or keyless: signer (val is
// what follows the kind), once per entry.
func (e *parseEnv) registryCheck(kind, spec, val string) (attest.Checker, error) {
	if c, ok := e.checks[spec]; ok {
		return c, nil
	}
	loaders.RLock()
	notation, keyless := loaders.notation, loaders.keyless
	loaders.RUnlock()
	var c attest.Checker
	var err error
	switch {
	case kind == SignerNotation && notation == nil, kind == SignerKeyless && keyless == nil:
		return nil, fmt.Errorf("signers: %q: this program cannot check %s signers", spec, kind)
	case kind == SignerNotation:
		c, err = notation(e.path(val))
	case e.trustedRoot == "":
		return nil, fmt.Errorf("signers: %q: a keyless signer needs the policy's top-level trusted_root = \"FILE\" (the Sigstore trusted_root.json to check certificates, transparency-log entries and timestamps against)", spec)
	default:
		c, err = keyless(e.trustedRoot, val)
	}
	if err != nil {
		return nil, fmt.Errorf("signers: %q: %v", spec, err)
	}
	e.checks[spec] = c
	return c, nil
}
