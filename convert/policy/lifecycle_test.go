package policy

import (
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

const lifecycleExample = `
provider "hashicorp/aws" {
  versions = ">= 4.0.0"
  deprecated {
    versions = "< 4.50.0"
    message  = "4.x before 4.50 logs too much: move to 5.x"
  }
  deprecated {
    versions = "< 5.0.0"
    message  = "4.x gets no fixes after 2027-01-01: move to 5.x"
  }
  revoked {
    versions = ["5.31.0", "5.32.1"]
    message  = "CVE-2026-1234: logs credentials"
  }
  keep { versions = ">= 5.40.0" }
  keep { versions = "4.67.0" }
}
provider "hashicorp/*" {
  deprecated { message = "every hashicorp provider but aws is deprecated here" }
}
module "platform/vpc/aws" {
  revoked {
    versions = "1.2.0"
    message  = "destroys the VPC's peering"
  }
}
`

const awsAddr = "registry.opentofu.org/hashicorp/aws"

func mustParse(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := Parse([]byte(src), "policy.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustVersion(t *testing.T, s string) names.Version {
	t.Helper()
	v, err := names.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A deprecated version is allowed and carries the message of the first
// matching block; a revoked one is denied with its message, before the
// rule's versions are asked; the rule deciding the address is the only
// one whose blocks count.
func TestDecideLifecycle(t *testing.T) {
	p := mustParse(t, lifecycleExample)
	for _, c := range []struct {
		kind            names.Kind
		addr, version   string
		allow           bool
		deprecated, why string
	}{
		{names.KindProvider, awsAddr, "4.10.0", true, "4.x before 4.50 logs too much: move to 5.x", "is allowed"},
		{names.KindProvider, awsAddr, "4.67.0", true, "4.x gets no fixes after 2027-01-01: move to 5.x", "is allowed"},
		{names.KindProvider, awsAddr, "5.0.0", true, "", "is allowed"},
		{names.KindProvider, awsAddr, "5.31.0", false, "", `5.31.0 is revoked by the policy's rule "hashicorp/aws": CVE-2026-1234: logs credentials`},
		{names.KindProvider, awsAddr, "5.32.1", false, "", "CVE-2026-1234"},
		{names.KindProvider, awsAddr, "3.0.0", false, "", "does not meet versions"},
		// The wildcard rule decides google: its block has no versions.
		{names.KindProvider, "registry.opentofu.org/hashicorp/google", "1.0.0-beta1", true, "every hashicorp provider but aws is deprecated here", "is allowed"},
		{names.KindProvider, "registry.opentofu.org/other/x", "1.0.0", true, "", "default is allow"},
		{names.KindModule, "registry.opentofu.org/platform/vpc/aws", "1.2.0", false, "", "destroys the VPC's peering"},
		{names.KindModule, "registry.opentofu.org/platform/vpc/aws", "1.3.0", true, "", "is allowed"},
	} {
		d := p.Decide(c.kind, c.addr, c.version)
		if d.Allow != c.allow || d.Deprecated != c.deprecated || !strings.Contains(d.Reason, c.why) {
			t.Errorf("Decide(%s, %s, %s) = %+v, want allow=%v deprecated=%q reason containing %q", c.kind, c.addr, c.version, d, c.allow, c.deprecated, c.why)
		}
		v := mustVersion(t, c.version)
		msg, ok := p.Deprecation(c.kind, c.addr, v)
		if c.allow && (ok != (c.deprecated != "") || msg != c.deprecated) {
			t.Errorf("Deprecation(%s, %s) = %q, %v; Decide says %q", c.addr, c.version, msg, ok, c.deprecated)
		}
	}
	if d := p.Decide(names.KindProvider, awsAddr, ""); !strings.Contains(d.Reason, `revoked versions = ["5.31.0", "5.32.1"]`) {
		t.Errorf("the address's decision does not name the revoked versions: %+v", d)
	}
}

// Revocation names the message of the deciding rule's revoked block
// about a version, whatever Decide says, and only that rule's.
func TestRevocation(t *testing.T) {
	p := mustParse(t, lifecycleExample)
	for _, c := range []struct {
		kind          names.Kind
		addr, version string
		msg           string
	}{
		{names.KindProvider, awsAddr, "5.31.0", "CVE-2026-1234: logs credentials"},
		{names.KindProvider, awsAddr, "5.32.1", "CVE-2026-1234: logs credentials"},
		{names.KindProvider, awsAddr, "3.0.0", ""}, // denied, not revoked
		{names.KindProvider, awsAddr, "5.0.0", ""},
		{names.KindProvider, "registry.opentofu.org/hashicorp/google", "5.31.0", ""},
		{names.KindModule, "registry.opentofu.org/platform/vpc/aws", "1.2.0", "destroys the VPC's peering"},
	} {
		msg, ok := p.Revocation(c.kind, c.addr, mustVersion(t, c.version))
		if ok != (c.msg != "") || msg != c.msg {
			t.Errorf("Revocation(%s, %s) = %q, %v; want %q", c.addr, c.version, msg, ok, c.msg)
		}
	}
	if _, ok := (*Policy)(nil).Revocation(names.KindProvider, awsAddr, mustVersion(t, "5.31.0")); ok {
		t.Error("no policy revokes a version")
	}
}

// Keeps answers from the deciding rule's keep blocks only.
func TestKeeps(t *testing.T) {
	p := mustParse(t, lifecycleExample)
	for _, c := range []struct {
		addr, version string
		keep          bool
	}{
		{awsAddr, "5.40.0", true},
		{awsAddr, "6.1.0", true},
		{awsAddr, "4.67.0", true},
		{awsAddr, "4.66.0", false},
		{awsAddr, "5.39.9", false},
		{"registry.opentofu.org/hashicorp/google", "9.0.0", false},
		{"example.com/a/b", "1.0.0", false},
	} {
		if got := p.Keeps(names.KindProvider, c.addr, mustVersion(t, c.version)); got != c.keep {
			t.Errorf("Keeps(%s, %s) = %v, want %v", c.addr, c.version, got, c.keep)
		}
	}
	var none *Policy
	if none.Keeps(names.KindProvider, awsAddr, mustVersion(t, "1.0.0")) {
		t.Error("a nil policy keeps")
	}
	if _, ok := none.Deprecation(names.KindProvider, awsAddr, mustVersion(t, "1.0.0")); ok {
		t.Error("a nil policy deprecates")
	}
}

func TestParseLifecycleErrors(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"no message", "provider \"a/b\" {\n  deprecated { versions = \"1.0.0\" }\n}", `policy.hcl:2:16: Missing required argument: The argument "message" is required`},
		{"empty message", "provider \"a/b\" {\n  revoked {\n    message = \"  \"\n  }\n}", "policy.hcl:3:15: revoked: message is empty"},
		{"newline in message", "provider \"a/b\" {\n  deprecated {\n    message = \"a\\nb\"\n  }\n}", "policy.hcl:3:15: deprecated: message has a control character"},
		{"long message", inRule(`deprecated { message = "` + strings.Repeat("x", 1025) + `" }`), "message is longer than 1024 bytes"},
		{"unknown attribute", "provider \"a/b\" {\n  deprecated {\n    message = \"m\"\n    reason = \"r\"\n  }\n}", "policy.hcl:4:5: Unsupported argument"},
		{"keep with message", "provider \"a/b\" {\n  keep {\n    message = \"m\"\n  }\n}", "policy.hcl:3:5: Unsupported argument"},
		{"bad constraint", "provider \"a/b\" {\n  revoked {\n    versions = \">= banana\"\n    message = \"m\"\n  }\n}", "policy.hcl:3:16: revoked: invalid version constraint"},
		{"bad constraint in list", inRule(`keep { versions = ["1.0.0", "1.x.y"] }`), "policy.hcl:2:19: keep: invalid version constraint"},
		{"empty versions", inRule(`keep { versions = "" }`), "policy.hcl:2:19: keep: versions has an empty constraint"},
		{"empty list", inRule(`keep { versions = [] }`), "policy.hcl:2:19: keep: versions is empty"},
		{"number", inRule(`keep { versions = 5 }`), "policy.hcl:2:19: Unsuitable value type"},
		{"label", inRule(`deprecated "x" { message = "m" }`), "policy.hcl:2:12: Extraneous label"},
		{"attribute not block", `provider "a/b" { deprecated = "m" }`, "policy.hcl:1:18: Unsupported argument"},
		{"variables", inRule(`revoked { message = var.m }`), "policy.hcl:2:21: Variables not allowed"},
		{"nested block", inRule("keep {\n  keep {}\n}"), "policy.hcl:3:3: Unsupported block type"},
		{"in tofu, too", "tofu {\n  revoked { message = \"\" }\n}", "policy.hcl:2:23: revoked: message is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), "policy.hcl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(%q) = %v, want an error containing %q", c.src, err, c.want)
			}
		})
	}
}

// Hostile lifecycle blocks end in a clear error.
func TestParseLifecycleHostile(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"many blocks", inRule(strings.Repeat("keep {}\n", 5000)), "policy.hcl:102:1: the rule has 5000 deprecated, revoked and keep blocks, more than 100"},
		{"huge list", inRule(`keep { versions = [` + strings.Repeat(`"1.0.0",`, 5000) + `] }`), "versions has more than 1000 items"},
		{"huge constraint", inRule("revoked {\nmessage = \"m\"\nversions = \"" + strings.Repeat(">= 1.0.0, ", 1000) + "\"\n}"), "longer than 4096 bytes"},
		{"NUL in message", inRule(`deprecated { message = "a\u0000b" }`), "control character"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), "policy.hcl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// inRule is block as the only content of a provider rule, from line 2,
// column 1 of the file.
func inRule(block string) string { return "provider \"a/b\" {\n" + block + "\n}" }
