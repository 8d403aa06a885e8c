package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
)

func TestParsePolicyQuery(t *testing.T) {
	for _, c := range []struct {
		arg           string
		kind          names.Kind
		addr, version string
	}{
		{"hashicorp/aws@5.1.0", names.KindProvider, "registry.opentofu.org/hashicorp/aws", "5.1.0"},
		{"example.com/test/hello", names.KindProvider, "example.com/test/hello", ""},
		{"provider:example.com/test/hello@1.0.0", names.KindProvider, "example.com/test/hello", "1.0.0"},
		{"tofu.example.com/platform/vpc/aws@1.2.0", names.KindModule, "tofu.example.com/platform/vpc/aws", "1.2.0"},
		{"module:platform/vpc/aws", names.KindModule, "registry.opentofu.org/platform/vpc/aws", ""},
		{"tofu@1.9.0", names.KindTofu, "tofu", "1.9.0"},
	} {
		q, err := parsePolicyQuery(c.arg)
		if err != nil || q.Kind != c.kind || q.Address != c.addr || q.Version != c.version {
			t.Errorf("parsePolicyQuery(%q) = %+v, %v", c.arg, q, err)
		}
	}
	for _, bad := range []string{"hashicorp/aws@banana", "module:a/b", "a/b/c/d/e", "@1.0.0"} {
		if _, err := parsePolicyQuery(bad); err == nil {
			t.Errorf("parsePolicyQuery(%q) accepted", bad)
		}
	}
}

// policy test's line for a deprecated version says so, with the message.
func TestPolicyQueryExplainsDeprecation(t *testing.T) {
	q := policyQuery{Decision: policy.Decision{Allow: true, Rule: "aws", Reason: "allowed", Deprecated: "4.x is end of life"}}
	if got, want := q.explanation(), `rule "aws": allowed; deprecated: 4.x is end of life`; q.verdict() != "allow" || got != want {
		t.Errorf("%s %q, want allow %q", q.verdict(), got, want)
	}
}

// policy test --json says what its text says: "verdict" is the word the
// line starts with, and "allow" is true exactly when that word is allow
// (what serve would serve to that caller); "policy_allows" keeps the
// policy's own decision, "access" and "admission" their reasons.
func TestPolicyTestJSONVerdictIsTheTextVerdict(t *testing.T) {
	allowed := policy.Decision{Allow: true, Rule: "r", Reason: "allowed"}
	for _, q := range []policyQuery{
		{Decision: allowed},
		{Decision: policy.Decision{Rule: "r", Reason: "denied"}},
		{Decision: policy.Decision{Rule: "r", Reason: "needs", DependsOn: []string{"min_age"}}},
		{Decision: allowed, Admission: &proxy.AdmissionVerdict{Admitted: false, Reason: "no attestation"}},
		{Decision: allowed, Admission: &proxy.AdmissionVerdict{Admitted: true}},
		{Decision: allowed, Access: &clientAccess{Client: "team-a", Reads: false, Reason: "client team-a may not read it"}},
		{Decision: allowed, Access: &clientAccess{Client: "team-a", Reads: true, Reason: "client team-a may read it"}},
	} {
		b, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Verdict      string
			Allow        bool
			PolicyAllows bool `json:"policy_allows"`
			Rule         string
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Verdict != q.verdict() || got.Allow != (q.verdict() == "allow") || got.PolicyAllows != q.Allow || got.Rule != "r" {
			t.Errorf("%s: %s", q.verdict(), b)
		}
	}
}

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
