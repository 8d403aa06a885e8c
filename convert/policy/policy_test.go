package policy

import (
	"reflect"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

const example = `
default = "deny"
provider "registry.opentofu.org/hashicorp/aws" {
  name     = "aws-pinned"
  deny     = ["5.2.0"]
  versions = ">= 5.0.0, != 5.31.0"
}
provider "registry.opentofu.org/hashicorp/*" {
  platforms = ["linux_amd64", "darwin_arm64"]
}
provider "example.com/*/*" {}
module "tofu.example.com/platform/*/*" { versions = "~> 1.0" }
tofu { versions = ">= 1.9.0" }
`

func TestDecide(t *testing.T) {
	p, err := Parse([]byte(example), "policy.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind          names.Kind
		addr, version string
		allow         bool
		rule, reason  string
	}{
		{names.KindProvider, "registry.opentofu.org/hashicorp/aws", "5.1.0", true, "aws-pinned", "allowed by the policy's rule \"aws-pinned\""},
		{names.KindProvider, "registry.opentofu.org/hashicorp/aws", "5.2.0", false, "aws-pinned", "denied by the policy's rule \"aws-pinned\""},
		{names.KindProvider, "registry.opentofu.org/hashicorp/aws", "5.31.0", false, "aws-pinned", "does not meet versions = \">= 5.0.0, != 5.31.0\""},
		{names.KindProvider, "registry.opentofu.org/hashicorp/aws", "4.9.0", false, "aws-pinned", "does not meet"},
		{names.KindProvider, "registry.opentofu.org/hashicorp/aws", "6.0.0-beta1", false, "aws-pinned", "does not meet"},
		{names.KindProvider, "Registry.OpenTofu.org/HashiCorp/AWS", "5.1.0", true, "aws-pinned", ""},
		// first match decides: the wildcard rule after aws has no versions
		{names.KindProvider, "registry.opentofu.org/hashicorp/google", "1.0.0", true, "registry.opentofu.org/hashicorp/*", ""},
		{names.KindProvider, "example.com/test/hello", "2.0.0", true, "example.com/*/*", ""},
		{names.KindProvider, "registry.opentofu.org/other/thing", "1.0.0", false, DefaultRule, "default is deny"},
		{names.KindProvider, "registry.opentofu.org/hashicorp/aws", "", true, "aws-pinned", "for the versions it allows"},
		{names.KindProvider, "registry.opentofu.org/hashicorp/aws", "not-a-version", false, "aws-pinned", "is not a version"},
		{names.KindModule, "tofu.example.com/platform/vpc/aws", "1.4.0", true, "tofu.example.com/platform/*/*", ""},
		{names.KindModule, "tofu.example.com/platform/vpc/aws", "2.0.0", false, "tofu.example.com/platform/*/*", "does not meet"},
		{names.KindModule, "tofu.example.com/other/vpc/aws", "1.0.0", false, DefaultRule, ""},
		{names.KindTofu, "tofu", "1.9.1", true, "tofu", ""},
		{names.KindTofu, "tofu", "1.8.0", false, "tofu", "does not meet"},
	} {
		d := p.Decide(c.kind, c.addr, c.version)
		if d.Allow != c.allow || d.Rule != c.rule || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("Decide(%s, %s, %s) = %+v, want allow=%v rule=%q reason containing %q", c.kind, c.addr, c.version, d, c.allow, c.rule, c.reason)
		}
		// DecideVersion, the proxy's question with the version parsed,
		// must give the same decision, word for word.
		if v, err := names.ParseVersion(c.version); err == nil {
			if dv := p.DecideVersion(c.kind, c.addr, v); !reflect.DeepEqual(dv, d) {
				t.Errorf("DecideVersion(%s, %s, %s) = %+v, Decide gave %+v", c.kind, c.addr, c.version, dv, d)
			}
		}
	}
}

func TestDefaultAllowAndNil(t *testing.T) {
	p, err := Parse([]byte(`provider "hashicorp/aws" { deny = ["1.0.0"] }`), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Decide(names.KindProvider, "registry.opentofu.org/other/x", "1.0.0"); !d.Allow || d.Rule != DefaultRule {
		t.Errorf("default allow: %+v", d)
	}
	if d := p.Decide(names.KindProvider, "registry.opentofu.org/hashicorp/aws", "1.0.0"); d.Allow {
		t.Errorf("two-segment pattern on the default host: %+v", d)
	}
	var none *Policy
	if d := none.Decide(names.KindProvider, "a/b/c", "1.0.0"); !d.Allow {
		t.Errorf("nil policy: %+v", d)
	}
	if d := none.Platform(names.KindProvider, "a/b/c", "linux_amd64"); !d.Allow {
		t.Errorf("nil policy platform: %+v", d)
	}
}

// DefaultWritten tells a file that says its default from one that leaves
// it implicit (what a reload asks of a file with no rules; the empty
// file's implicit "allow" is the start-up behaviour).
func TestDefaultWritten(t *testing.T) {
	for _, c := range []struct {
		src           string
		written, deny bool
		rules         int
	}{
		{"", false, false, 0},
		{"# only a comment\n", false, false, 0},
		{`provider "a/b" {}`, false, false, 1},
		{`default = "allow"`, true, false, 0},
		{"default = \"deny\"\nprovider \"a/b\" {}\n", true, true, 1},
	} {
		p, err := Parse([]byte(c.src), "p.hcl")
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		if p.DefaultWritten() != c.written || p.DenyByDefault() != c.deny || p.Rules() != c.rules {
			t.Errorf("%q: written %v, deny %v, rules %d; want %v, %v, %d", c.src, p.DefaultWritten(), p.DenyByDefault(), p.Rules(), c.written, c.deny, c.rules)
		}
	}
	var none *Policy
	if none.DefaultWritten() || none.DenyByDefault() {
		t.Error("a nil policy writes a default")
	}
}

func TestPlatform(t *testing.T) {
	p, err := Parse([]byte(example), "policy.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		addr, platform string
		allow          bool
	}{
		{"registry.opentofu.org/hashicorp/google", "linux_amd64", true},
		{"registry.opentofu.org/hashicorp/google", "windows_amd64", false},
		{"registry.opentofu.org/hashicorp/aws", "windows_amd64", true}, // aws-pinned lists no platforms
		{"example.com/test/hello", "freebsd_386", true},
	} {
		if d := p.Platform(names.KindProvider, c.addr, c.platform); d.Allow != c.allow {
			t.Errorf("Platform(%s, %s) = %+v", c.addr, c.platform, d)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"syntax", "provider \"a/b\" {\n  versions = \n}", "policy.hcl:2:"},
		{"unknown attribute", "provider \"a/b\" {\n  colour = \"7d\"\n}", "policy.hcl:2:3: Unsupported argument"},
		{"unknown block", "resource \"x\" {}", "policy.hcl:1:1: Unsupported block type"},
		{"bad default", `default = "maybe"`, `policy.hcl:1:11: default must be "allow" or "deny"`},
		{"bad pattern", `provider "*/aws" {}`, "policy.hcl:1:10: invalid provider matching pattern"},
		{"bad pattern segments", `provider "a/b/c/d" {}`, "two or three slash-separated segments"},
		{"bad module pattern", `module "a/b" {}`, "policy.hcl:1:8: invalid module pattern"},
		{"bad module segment", `module "a/b[/c/d" {}`, "neither a name nor the wildcard"},
		{"bad constraint", `provider "a/b" { versions = ">= banana" }`, "policy.hcl:1:29: invalid version constraint"},
		{"bad deny", `provider "a/b" { deny = ["1.x"] }`, "deny: \"1.x\" is not a version"},
		{"deny not a list", `provider "a/b" { deny = "1.0.0" }`, "policy.hcl:1:26: Unsuitable value type"},
		{"bad platform", `provider "a/b" { platforms = ["linux"] }`, "platforms:"},
		{"variables", `provider "a/b" { versions = var.x }`, "policy.hcl:1:29: Variables not allowed"},
		{"functions", `provider "a/b" { versions = file("/etc/passwd") }`, "policy.hcl:1:29: Function calls not allowed"},
		{"duplicate names", "provider \"a/b\" { name = \"x\" }\nprovider \"a/c\" { name = \"x\" }", "policy.hcl:2:1: a provider rule named \"x\" is already defined at line 1"},
		{"empty name", `provider "a/b" { name = "" }`, "name must be 1 to 128"},
		{"tofu label", `tofu "x" {}`, "policy.hcl:1:6: Extraneous label"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), "policy.hcl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(%q) = %v, want an error containing %q", c.src, err, c.want)
			}
		})
	}
}

// Hostile files end in a clear error, never a panic or a long parse.
func TestParseHostile(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"10 MB", "# " + strings.Repeat("x", 10<<20), "larger than 1048576 bytes"},
		{"deep nesting", "default = " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000), "policy.hcl:1:43: nested deeper than 32 levels"},
		{"deep braces", "tofu {}\n" + strings.Repeat("{", 5000), "policy.hcl:2:33: nested deeper"},
		{"100,000 rules", strings.Repeat("tofu {}\n", 100000), "policy.hcl:10001:1: the policy has 100000 rules, more than 10000"},
		{"huge list", `provider "a/b" { deny = [` + strings.Repeat(`"1.0.0",`, 5000) + `] }`, "deny has more than 1000 items"},
		{"huge constraint", `provider "a/b" { versions = "` + strings.Repeat(">= 1.0.0, ", 1000) + `" }`, "longer than 4096 bytes"},
		{"huge version numbers", `provider "a/b" { versions = ">= 99999999999999999999999.0.0" }`, "invalid version constraint"},
		{"binary", "\x00\xff\xfe", "policy.hcl:1:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), "policy.hcl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	if _, err := Load(t.TempDir() + "/missing.hcl"); err == nil || !strings.Contains(err.Error(), "reading the policy") {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte(lifecycleExample))
	f.Add([]byte(inRule("deprecated {\n  versions = [\"1.0.0\", \"< 0.1\"]\n  message = \"m\"\n}\nkeep {}\nrevoked { message = \"r\" }")))
	f.Add([]byte(inRule("keep { versions = [] }\nrevoked {\n  message = \"\\u0007\"\n}")))
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := Parse(src, "fuzz.hcl")
		if err == nil {
			p.Decide(names.KindProvider, "registry.opentofu.org/hashicorp/aws", "1.0.0")
			p.Platform(names.KindProvider, "registry.opentofu.org/hashicorp/aws", "linux_amd64")
			v, _ := names.ParseVersion("1.0.0")
			p.Keeps(names.KindProvider, "registry.opentofu.org/hashicorp/aws", v)
			// A deprecation is told only of a version the policy allows.
			if d := p.DecideVersion(names.KindProvider, "registry.opentofu.org/hashicorp/aws", v); d.Deprecated != "" && !d.Allow {
				t.Fatalf("a denied version is deprecated: %+v", d)
			}
			if d := p.DecideVersion(names.KindProvider, "registry.opentofu.org/hashicorp/aws", v); d.Allow {
				if msg, _ := p.Deprecation(names.KindProvider, "registry.opentofu.org/hashicorp/aws", v); msg != d.Deprecated {
					t.Fatalf("Deprecation says %q, the decision %q", msg, d.Deprecated)
				}
			}
			// The index finds the rule the plain scan does.
			for _, q := range []struct {
				kind names.Kind
				addr string
			}{{names.KindProvider, "registry.opentofu.org/hashicorp/aws"}, {names.KindProvider, "example.com/test/hello"},
				{names.KindModule, "tofu.example.com/platform/vpc/aws"}, {names.KindTofu, "tofu"}} {
				if got, want := p.index.first(p.rules, q.kind, q.addr), scan(p.rules, q.kind, q.addr); got != want {
					t.Fatalf("%s %s: the index finds rule %d, the scan %d", q.kind, q.addr, got, want)
				}
			}
		}
	})
}
