package policy

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

const vulnsExample = `
provider "hashicorp/aws" {
  vulnerabilities {
    action  = "deny"
    missing = "deny"
  }
}
provider "hashicorp/google" {
  vulnerabilities {
    action = "warn"
    ids    = ["CVE-2022-32149", "GO-2099-0001"]
  }
}
provider "*/*/*" {
  vulnerabilities {
    action = "deny"
    allow  = ["go-2022-1059"]
  }
}
`

var xtext = vulns.Finding{ID: "GO-2022-1059", Aliases: []string{"CVE-2022-32149", "GHSA-69ch-w2m2-3vjp"}, Summary: "DoS", Module: "golang.org/x/text", Version: "v0.3.7", Fixed: "v0.3.8"}
var stdlib = vulns.Finding{ID: "GO-2024-2963", Aliases: []string{"CVE-2024-24791"}, Module: "stdlib", Version: "go1.22.1", Fixed: "v1.22.5"}

func TestVulnerabilities(t *testing.T) {
	p, err := Parse([]byte(vulnsExample), "vulns.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasVulnerabilities() || !p.HasFacts() {
		t.Fatal("HasVulnerabilities or HasFacts is false")
	}
	if n := p.Needs(names.KindProvider, awsAddr); n.Vulns == nil || !n.Any() {
		t.Fatalf("Needs(aws) = %+v, want its vulnerabilities", n)
	}
	both := []PlatformVulns{
		{Platform: "linux_amd64", SBOM: true, Findings: []vulns.Finding{xtext, stdlib}},
		{Platform: "darwin_arm64", SBOM: true, Findings: []vulns.Finding{xtext}},
	}
	now := time.Now()
	for _, c := range []struct {
		name, addr string
		ps         []PlatformVulns
		allow      bool
		ids        []string
		reason     string // a substring
		warning    string
	}{
		{"deny", awsAddr, both, false, []string{"GO-2022-1059", "GO-2024-2963"}, `has known vulnerabilities the policy's rule "hashicorp/aws" denies: GO-2022-1059 (CVE-2022-32149) in golang.org/x/text v0.3.7, fixed in v0.3.8; GO-2024-2963 (CVE-2024-24791) in stdlib go1.22.1, fixed in v1.22.5`, ""},
		{"clean", awsAddr, []PlatformVulns{{Platform: "linux_amd64", SBOM: true}}, true, nil, "is allowed", ""},
		{"missing denied", awsAddr, []PlatformVulns{{Platform: "linux_amd64", SBOM: true}, {Platform: "windows_amd64"}}, false, nil, `has no SBOM stored for windows_amd64, and the policy's rule "hashicorp/aws" denies versions without one (vulnerabilities: missing = "deny")`, ""},
		{"warn only the ids (by alias)", "registry.opentofu.org/hashicorp/google", both, true, []string{"GO-2022-1059"}, "is allowed", "known vulnerabilities: GO-2022-1059 (CVE-2022-32149) in golang.org/x/text v0.3.7, fixed in v0.3.8"},
		{"missing allowed by default", "registry.opentofu.org/hashicorp/google", []PlatformVulns{{Platform: "linux_amd64"}}, true, nil, "is allowed", ""},
		{"allow-list (any case)", "registry.opentofu.org/acme/x", []PlatformVulns{{Platform: "linux_amd64", SBOM: true, Findings: []vulns.Finding{xtext}}}, true, nil, "is allowed", ""},
		{"allow-list leaves the rest", "registry.opentofu.org/acme/x", both, false, []string{"GO-2024-2963"}, "denies: GO-2024-2963 (CVE-2024-24791) in stdlib", ""},
	} {
		d := p.DecideWith(names.KindProvider, c.addr, "1.0.0", Facts{Vulns: c.ps}, now)
		if d.Allow != c.allow || !slices.Equal(d.Vulnerable, c.ids) || !strings.Contains(d.Reason, c.reason) || d.VulnWarning != c.warning {
			t.Errorf("%s: %+v\nwant allow %v, ids %v, reason with %q, warning %q", c.name, d, c.allow, c.ids, c.reason, c.warning)
		}
	}
	if d := p.DecideOffline(names.KindProvider, awsAddr, "1.0.0"); d.Allow || !slices.Equal(d.DependsOn, []string{"vulnerabilities"}) {
		t.Errorf("DecideOffline = %+v, want pending on vulnerabilities", d)
	}
	var many []vulns.Finding
	for i := range 50 {
		f := xtext
		f.ID = "GO-2022-" + strings.Repeat("9", 30) + string(rune('a'+i%26))
		f.Module = strings.Repeat("m", 200)
		many = append(many, f)
	}
	if msg := "known vulnerabilities: " + DescribeFindings(many); !ValidMessage(msg) || !strings.Contains(msg, "more") || len(msg) > 600 {
		t.Errorf("a long list is no valid message (%d bytes): %s", len(msg), msg)
	}
}

func TestVulnerabilitiesErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`provider "a/b" {
  vulnerabilities { action = "block" }
}`, `t.hcl:2:30: vulnerabilities: action must be "deny" or "warn", not "block"`},
		{`provider "a/b" {
  vulnerabilities {}
}`, `Missing required argument`},
		{`provider "a/b" {
  vulnerabilities {
    action = "deny"
    missing = "warn"
  }
}`, `missing must be "allow" or "deny"`},
		{`provider "a/b" {
  vulnerabilities {
    action = "deny"
    ids = []
  }
}`, `ids is empty`},
		{`provider "a/b" {
  vulnerabilities {
    action = "deny"
    allow = ["not an id"]
  }
}`, `allow: "not an id" is not a vulnerability ID`},
		{`provider "a/b" {
  vulnerabilities { action = "deny" }
  vulnerabilities { action = "warn" }
}`, `t.hcl:3:3: vulnerabilities: a rule has at most one such block`},
		{`module "a/b/c" {
  vulnerabilities { action = "deny" }
}`, `only a provider rule can have one`},
	} {
		_, err := Parse([]byte(c.src), "t.hcl")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n: error %v, want %q", c.src, err, c.want)
		}
	}
	if p, err := Parse([]byte(`provider "a/b" {}`), "t.hcl"); err != nil || p.HasVulnerabilities() {
		t.Errorf("HasVulnerabilities of a policy without the block: %v %v", p.HasVulnerabilities(), err)
	}
}
