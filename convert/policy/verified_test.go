package policy

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// loadedCheck records what a loader was given.
type loadedCheck struct{ args string }

func (c loadedCheck) Name() string { return c.args }

func (loadedCheck) Check(context.Context, oci.ReadOnlyRepository, string, digest.Digest, string) (error, error) {
	return nil, nil
}

func (loadedCheck) VerifyBundle([]byte, digest.Digest, string) (*attest.Statement, error) {
	return nil, errors.New("not verified")
}

// withLoaders installs loaders recording their arguments (each call
// appended to calls) for the test; the verifiers themselves are the
// command's (e2e/policy_signers_test.go).
func withLoaders(t *testing.T, calls *[]string) {
	t.Helper()
	SetNotationLoader(func(dir string) (attest.Checker, error) {
		*calls = append(*calls, "notation "+dir)
		if strings.HasSuffix(dir, "broken") {
			return nil, errors.New("holds no notation trust policy")
		}
		return loadedCheck{dir}, nil
	})
	SetKeylessLoader(func(root, id string) (attest.BundleChecker, error) {
		*calls = append(*calls, "keyless "+root+" "+id)
		return loadedCheck{root + " " + id}, nil
	})
	t.Cleanup(func() { SetNotationLoader(nil); SetKeylessLoader(nil) })
}

// notation: and keyless: signers are loaded once per entry, with paths
// relative to the policy file, keyless ones with the file's trusted_root.
func TestParseVerifiedSigners(t *testing.T) {
	var calls []string
	withLoaders(t, &calls)
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.hcl")
	p, err := Parse([]byte(`
trusted_root = "sigstore/root.json"
provider "a/b" { signers = ["notation:conf", "keyless:https://issuer.example=ci@example.com"] }
module "*/*/*" { signers = ["notation:conf"] }
tofu { signers = ["notation:/etc/notation"] }
`), file)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"notation " + filepath.Join(dir, "conf"), "keyless " + filepath.Join(dir, "sigstore/root.json") + " https://issuer.example=ci@example.com", "notation /etc/notation"}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("loaded:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	n := p.Needs(names.KindProvider, "registry.opentofu.org/a/b")
	if len(n.Signers) != 2 || n.Signers[0].Kind != SignerNotation || n.Signers[0].Check == nil || n.Signers[1].Kind != SignerKeyless {
		t.Errorf("Needs: %+v", n)
	}
	d := p.DecideWith(names.KindProvider, "registry.opentofu.org/a/b", "1.0.0", Facts{Signed: map[string]bool{"notation:conf": true}, Why: map[string]string{"keyless:https://issuer.example=ci@example.com": "expected SAN value"}}, time.Now())
	if d.Allow || !strings.Contains(d.Reason, `is not signed by keyless:https://issuer.example=ci@example.com, which the policy's rule "a/b" requires (a keyless Sigstore attestation by that identity: cosign attest): expected SAN value`) {
		t.Errorf("DecideWith without the keyless signature: %+v", d)
	}
}

func TestParseVerifiedSignerErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.hcl")
	for _, c := range []struct{ name, src, want string }{
		{"no trusted root", "provider \"a/b\" {\n  signers = [\"keyless:https://i.example=me\"]\n}", `policy.hcl:2:13: signers: "keyless:https://i.example=me": a keyless signer needs the policy's top-level trusted_root = "FILE"`},
		{"loader refuses", `module "a/b/c" { signers = ["notation:broken"] }`, `policy.hcl:1:28: signers: "notation:broken": holds no notation trust policy`},
		{"empty trusted root", `trusted_root = ""`, "policy.hcl:1:16: trusted_root must name a file"},
		{"trusted root not a string", `trusted_root = ["a"]`, "policy.hcl:1:16: Unsuitable value type"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls []string
			withLoaders(t, &calls)
			if _, err := Parse([]byte(c.src), file); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(%q) = %v, want an error containing %q", c.src, err, c.want)
			}
		})
	}
	// A program that installed no loader says it cannot check them.
	if _, err := Parse([]byte(`tofu { signers = ["notation:conf"] }`), file); err == nil || !strings.Contains(err.Error(), "this program cannot check notation signers") {
		t.Errorf("without a loader: %v", err)
	}
}
