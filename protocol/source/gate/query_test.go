package gate

import (
	"encoding/json"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func TestParseQuery(t *testing.T) {
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
		q, err := ParseQuery(c.arg)
		if err != nil || q.Kind != c.kind || q.Address != c.addr || q.Version != c.version {
			t.Errorf("ParseQuery(%q) = %+v, %v", c.arg, q, err)
		}
	}
	for _, bad := range []string{"hashicorp/aws@banana", "module:a/b", "a/b/c/d/e", "@1.0.0"} {
		if _, err := ParseQuery(bad); err == nil {
			t.Errorf("ParseQuery(%q) accepted", bad)
		}
	}
}

// policy test's line for a deprecated version says so, with the message.
func TestPolicyQueryExplainsDeprecation(t *testing.T) {
	q := Query{Decision: policy.Decision{Allow: true, Rule: "aws", Reason: "allowed", Deprecated: "4.x is end of life"}}
	if got, want := q.Explanation(), `rule "aws": allowed; deprecated: 4.x is end of life`; q.Verdict() != "allow" || got != want {
		t.Errorf("%s %q, want allow %q", q.Verdict(), got, want)
	}
}

// policy test --json says what its text says: "verdict" is the word the
// line starts with, and "allow" is true exactly when that word is allow
// (what serve would serve to that caller); "policy_allows" keeps the
// policy's own decision, "access" and "admission" their reasons.
func TestPolicyTestJSONVerdictIsTheTextVerdict(t *testing.T) {
	allowed := policy.Decision{Allow: true, Rule: "r", Reason: "allowed"}
	for _, q := range []Query{
		{Decision: allowed},
		{Decision: policy.Decision{Rule: "r", Reason: "denied"}},
		{Decision: policy.Decision{Rule: "r", Reason: "needs", DependsOn: []string{"min_age"}}},
		{Decision: allowed, Admission: &AdmissionVerdict{Admitted: false, Reason: "no attestation"}},
		{Decision: allowed, Admission: &AdmissionVerdict{Admitted: true}},
		{Decision: allowed, Access: &ClientAccess{Client: "team-a", Reads: false, Reason: "client team-a may not read it"}},
		{Decision: allowed, Access: &ClientAccess{Client: "team-a", Reads: true, Reason: "client team-a may read it"}},
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
		if got.Verdict != q.Verdict() || got.Allow != (q.Verdict() == "allow") || got.PolicyAllows != q.Allow || got.Rule != "r" {
			t.Errorf("%s: %s", q.Verdict(), b)
		}
	}
}
