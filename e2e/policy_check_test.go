package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// serve --check checks the policy against what is mapped: a rule that
// matches nothing the mappings admit, and a module rule without modules,
// are warnings in the table (the check still passes); a policy whose
// rules all can match is one ok row; a signer key that cannot be read
// fails the check, naming the file's line and column.
func TestServeCheckPolicy(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.hcl")
	os.WriteFile(file, []byte(`
provider "example.com/test/*" { name = "ours" }
provider "registry.opentofu.org/hashicorp/aws" { name = "aws" }
module "example.com/a/b/c" { name = "mod" }
`), 0o644)
	ca := testenv.NewCA(t)
	base := []string{"serve", "--check", "--tls-cert", ca.ServerCertFile, "--tls-key", ca.ServerKeyFile,
		"--provider-template", "oci-layout:" + dir + "/${namespace}/${type}", "--include", "example.com/*/*", "--policy", file}
	out, err := run(t, base...)
	if err != nil {
		t.Fatalf("serve --check: %v\n%s", err, out)
	}
	for _, want := range []string{
		`warning  policy provider rule "aws"`, "registry.opentofu.org/hashicorp/aws matches no provider address a mapping admits",
		`warning  policy module rule "mod"`, "no module template is configured",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("serve --check lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, `rule "ours"`) {
		t.Errorf("the rule that matches was reported:\n%s", out)
	}
	os.WriteFile(file, []byte(`provider "example.com/test/*" { name = "ours" }`), 0o644)
	if out, err = run(t, base...); err != nil || !strings.Contains(out, "ok       policy") || !strings.Contains(out, "1 rule, each can match what this proxy maps") {
		t.Errorf("serve --check with a matching policy: %v\n%s", err, out)
	}
	// A signer whose key cannot be read: the file is invalid, named with
	// its line and column.
	os.WriteFile(file, []byte("provider \"example.com/test/*\" {\n  signers = [\"attestation:missing.pub\"]\n}\n"), 0o644)
	if out, err = run(t, base...); exitCode(t, err) != 1 || !strings.Contains(out, file+`:2:13: signers: "attestation:missing.pub": reading the public key`) {
		t.Errorf("serve --check with a signer key that cannot be read: %v\n%s", err, out)
	}
}
