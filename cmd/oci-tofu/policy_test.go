package main

import (
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func TestParsePolicyQuery(t *testing.T) {
	for _, c := range []struct {
		arg           string
		kind          names.Kind
		addr, version string
	}{
		{"hashicorp/aws@5.1.0", policy.KindProvider, "registry.opentofu.org/hashicorp/aws", "5.1.0"},
		{"example.com/test/hello", policy.KindProvider, "example.com/test/hello", ""},
		{"provider:example.com/test/hello@1.0.0", policy.KindProvider, "example.com/test/hello", "1.0.0"},
		{"tofu.example.com/platform/vpc/aws@1.2.0", policy.KindModule, "tofu.example.com/platform/vpc/aws", "1.2.0"},
		{"module:platform/vpc/aws", policy.KindModule, "registry.opentofu.org/platform/vpc/aws", ""},
		{"tofu@1.9.0", policy.KindTofu, "tofu", "1.9.0"},
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
