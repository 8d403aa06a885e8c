package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
)

// With --as, an address the client may not read is "allow": false in
// the JSON, as the text line says deny, with the access's reason.
func TestPolicyTestAsClientJSON(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(file, []byte(`
default = "allow"
client "team-a" {
  tokens    = ["`+policy.TokenHash("t")+`"]
  providers = ["example.com/team-a/*"]
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		app := newApp()
		app.Writer = &out
		if err := app.Run(append([]string{"oci-tofu", "policy", "test", "--policy", file, "--as", "team-a"}, args...)); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	text := run("example.com/team-a/hello", "example.com/team-b/hello")
	var doc struct {
		Decisions []struct {
			Address, Verdict string
			Allow            bool
			PolicyAllows     bool `json:"policy_allows"`
			Access           struct {
				Reads  bool
				Reason string
			}
		}
	}
	out := run("--json", "example.com/team-a/hello", "example.com/team-b/hello")
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Decisions) != 2 {
		t.Fatalf("%v\n%s", err, out)
	}
	a, b := doc.Decisions[0], doc.Decisions[1]
	if !strings.HasPrefix(text, "allow ") || !a.Allow || a.Verdict != "allow" || !a.Access.Reads {
		t.Errorf("team-a's own address:\n%s\n%s", text, out)
	}
	if !strings.Contains(text, "\ndeny ") || b.Allow || b.Verdict != "deny" || !b.PolicyAllows || b.Access.Reads ||
		!strings.Contains(b.Access.Reason, "may not read example.com/team-b/hello") {
		t.Errorf("team-b's address, which team-a may not read:\n%s\n%s", text, out)
	}
}
