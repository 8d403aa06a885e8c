package policy_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func clientsPolicy(t *testing.T, body string) (*policy.Policy, error) {
	t.Helper()
	return policy.Parse([]byte(body), "policy.hcl")
}

// A client reads what its patterns name, by the patterns' own syntax, and
// nothing else; its tokens are found by their hash, and expire.
func TestClientsReadWhatTheirPatternsName(t *testing.T) {
	p, err := clientsPolicy(t, fmt.Sprintf(`
client "team-a" {
  tokens    = [%q, %q]
  expires   = "2030-01-31T00:00:00Z"
  providers = ["team-a/*", "example.com/shared/*"]
  modules   = ["*/team-a/*/*"]
}
client "ci" {
  tokens = [%q]
  tofu   = true
  rate   = 2.5
}
provider "hashicorp/*" {}
`, policy.TokenHash("a-one"), policy.TokenHash("a-two"), policy.TokenHash("ci-token")))
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasClients() || strings.Join(p.ClientNames(), ",") != "team-a,ci" || p.Rules() != 1 {
		t.Fatalf("clients %v, %d rules", p.ClientNames(), p.Rules())
	}
	a := p.ClientOf(sha256.Sum256([]byte("a-two")))
	if a == nil || a.Name != "team-a" || p.ClientOf(sha256.Sum256([]byte("nobody"))) != nil {
		t.Fatalf("token lookup: %+v", a)
	}
	for _, c := range []struct {
		kind    string
		address string
		want    bool
	}{
		{"provider", "registry.opentofu.org/team-a/widgets", true},
		{"provider", "Registry.OpenTofu.org/Team-A/Widgets", true},
		{"provider", "registry.opentofu.org/team-b/widgets", false},
		{"provider", "example.com/shared/x", true},
		{"provider", "example.com/other/x", false},
		{"module", "localhost/team-a/net/aws", true},
		{"module", "localhost/team-b/net/aws", false},
		{"tofu", "", false},
	} {
		if _, got := a.Reads(kindOf(c.kind), c.address); got != c.want {
			t.Errorf("team-a reads %s %s: %v, want %v", c.kind, c.address, got, c.want)
		}
	}
	ci := p.Client("ci")
	if ci.Rate != 2.5 || ci.Burst != 5 || a.Rate != 0 {
		t.Errorf("budgets: ci %v/%d, team-a %v", ci.Rate, ci.Burst, a.Rate)
	}
	if _, ok := ci.Reads(kindOf("tofu"), ""); !ok {
		t.Error("ci cannot read OpenTofu releases")
	}
	if _, ok := ci.Reads(kindOf("provider"), "registry.opentofu.org/hashicorp/aws"); ok {
		t.Error("ci reads a provider no pattern of its names")
	}
	if a.Expired(time.Date(2030, 1, 30, 0, 0, 0, 0, time.UTC)) || !a.Expired(time.Date(2030, 1, 31, 0, 0, 0, 0, time.UTC)) || ci.Expired(time.Now().AddDate(50, 0, 0)) {
		t.Error("expiry")
	}
}

// Client blocks that cannot be what their writer meant are refused,
// with the line; a token written where its hash belongs is not echoed.
func TestClientBlocksRefused(t *testing.T) {
	h := policy.TokenHash("x")
	for _, c := range []struct{ body, want string }{
		{`client "a" { providers = ["*/*/*"] }`, `has neither tokens nor an oidc block`},
		{"client \"a\" {\n oidc {\n issuer = \"http://ci.example\"\n audience = \"x\"\n }\n}", "want https://host"},
		{"client \"a\" {\n oidc {\n issuer = \"https://ci.example\"\n audience = \" \"\n }\n}", "may not be empty"},
		{"client \"a\" {\n oidc {\n issuer = \"https://ci.example\"\n audience = \"x\"\n jwks = \"missing.json\"\n }\n}", "jwks:"},
		{"client \"a\" {\n oidc {\n issuer = \"https://ci.example\"\n audience = \"x\"\n claims = { sub = \"a\" }\n }\n}\nclient \"b\" {\n oidc {\n issuer = \"https://ci.example\"\n audience = \"y\"\n claims = { sub = \"b\" }\n }\n}", "verified one way"},
		{`client "a" { tokens = [] }`, "at least one token hash"},
		{`client "a" { tokens = ["my-secret-token-value"] }`, `"my-secre…" is not a token hash`},
		{`client "a" { tokens = ["sha256:` + strings.ToUpper(h[7:]) + `"] }`, "is not a token hash"},
		{`client "A b" { tokens = ["` + h + `"] }`, "invalid client name"},
		{`client "a" {` + "\n" + `tokens = ["` + h + `"]` + "\n" + ` expires = "tomorrow"` + "\n}", "not an RFC 3339 time"},
		{`client "a" {` + "\n" + `tokens = ["` + h + `"]` + "\n" + ` providers = ["a/b/c/d"]` + "\n}", "providers:"},
		{`client "a" {` + "\n" + `tokens = ["` + h + `"]` + "\n" + ` modules = ["a/b"]` + "\n}", "invalid module pattern"},
		{`client "a" { tokens = ["` + h + `"] }` + "\n" + `client "a" { tokens = ["` + policy.TokenHash("y") + `"] }`, `a client named "a" is already defined at line 1`},
		{`client "a" { tokens = ["` + h + `"] }` + "\n" + `client "b" { tokens = ["` + h + `"] }`, "a token names one client"},
		{`client "a" {` + "\n" + `tokens = ["` + h + `"]` + "\n" + ` versions = "1.0.0"` + "\n}", "Unsupported argument"},
		{`client "a" {` + "\n" + `tokens = ["` + h + `"]` + "\n" + ` rate = 0` + "\n}", "rate must be more than 0"},
		{`client "a" {` + "\n" + `tokens = ["` + h + `"]` + "\n" + ` burst = 5` + "\n}", "burst needs a rate"},
		{`client "a" {` + "\n" + `tokens = ["` + h + `"]` + "\n" + ` rate = 5` + "\n" + ` burst = 0` + "\n}", "burst must be 1 to"},
	} {
		_, err := clientsPolicy(t, c.body)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "policy.hcl:") {
			t.Errorf("%s:\n got %v\nwant …%s", c.body, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "my-secret-token-value") {
			t.Errorf("the error repeats a secret: %v", err)
		}
	}
}

func kindOf(s string) names.Kind { return names.Kind(s) }

// A verified token names the first client whose oidc block for its
// issuer has claims patterns all matching.
func TestClientsOfIdentities(t *testing.T) {
	p, err := clientsPolicy(t, `
client "acme-main" {
  oidc {
    issuer   = "https://ci.example"
    audience = "https://proxy.example"
    claims   = { repository_owner = "acme", ref = "refs/heads/main" }
  }
  providers = ["example.com/acme/*"]
}
client "acme-any" {
  oidc {
    issuer   = "https://ci.example"
    audience = "https://proxy.example"
    claims   = { sub = "repo:acme/*" }
  }
}
client "cluster" {
  oidc {
    issuer   = "https://kubernetes.default.svc"
    audience = "https://proxy.example"
    claims   = { sub = "system:serviceaccount:ci:*" }
  }
}
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		issuer string
		claims map[string]any
		want   string
	}{
		{"https://ci.example", map[string]any{"repository_owner": "acme", "ref": "refs/heads/main", "sub": "repo:acme/app:ref:refs/heads/main"}, "acme-main"},
		{"https://ci.example", map[string]any{"repository_owner": "acme", "ref": "refs/heads/dev", "sub": "repo:acme/app:ref:refs/heads/dev"}, "acme-any"},
		{"https://ci.example", map[string]any{"repository_owner": "other", "sub": "repo:other/app"}, ""},
		{"https://kubernetes.default.svc", map[string]any{"sub": "system:serviceaccount:ci:runner"}, "cluster"},
		{"https://kubernetes.default.svc", map[string]any{"sub": "system:serviceaccount:prod:runner"}, ""},
		{"https://elsewhere.example", map[string]any{"sub": "repo:acme/app"}, ""},
	} {
		got, _ := p.ClientOfIdentity(c.issuer, c.claims)
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != c.want {
			t.Errorf("%s %v: %q, want %q", c.issuer, c.claims, name, c.want)
		}
	}
	if is := p.Issuers(); len(is) != 2 || is[0].Issuer != "https://ci.example" || is[1].Audience != "https://proxy.example" {
		t.Errorf("issuers: %+v", is)
	}
}

// An oidc block must pin the identity: a claim the verifier does not
// already check, with a pattern that is more than wildcards; for the
// issuers that sign for anyone (GitHub Actions, gitlab.com, HCP
// Terraform, Buildkite) a claim
// naming the owner, written out. Otherwise every token its issuer signs
// for the audience, which anyone there may ask for, would name the
// client. Refusals give the file, line and column.
func TestOIDCBlocksMustPinTheIdentity(t *testing.T) {
	const (
		github    = "https://token.actions.githubusercontent.com"
		gitlab    = "https://gitlab.com"
		other     = "https://ci.example"
		hcp       = "https://app.terraform.io"
		buildkite = "https://agent.buildkite.com"
	)
	block := func(issuer, claims string) string {
		return fmt.Sprintf("client \"c\" {\n  oidc {\n    issuer   = %q\n    audience = \"https://proxy.example\"\n%s\n  }\n}\n", issuer, claims)
	}
	for _, c := range []struct {
		issuer, claims string
		want           string // the error's start; "" when accepted
	}{
		{other, "", "policy.hcl:2:3: client \"c\": an oidc block needs claims that pin the identity"},
		{other, "    claims   = {}", "policy.hcl:5:16: client \"c\": an oidc block needs claims that pin the identity"},
		{other, `    claims   = { sub = "*" }`, "policy.hcl:5:16: "},
		{other, `    claims   = { sub = "*?*" }`, "policy.hcl:5:16: "},
		{other, `    claims   = { aud = "https://proxy.example", iss = "https://ci.example" }`, "policy.hcl:5:16: "},
		{other, `    claims   = { sub = "system:serviceaccount:ci:*" }`, ""},
		{other, `    claims   = { ref = "main", sub = "*" }`, ""},
		{"https://gitlab.example.com", `    claims   = { ref = "main" }`, ""},

		{github, "", "policy.hcl:2:3: "},
		{github, `    claims   = { ref = "refs/heads/main" }`, "policy.hcl:5:16: client \"c\": issuer " + github + " signs tokens for every GitHub repository"},
		{github + "/", `    claims   = { ref = "refs/heads/main" }`, "policy.hcl:5:16: "},
		{"https://Token.Actions.GitHubusercontent.com", `    claims   = { environment = "prod" }`, "policy.hcl:5:16: "},
		{github, `    claims   = { repository_owner = "acme*" }`, "policy.hcl:5:16: "},
		{github, `    claims   = { repository_owner = "*" }`, "policy.hcl:5:16: "},
		{github, `    claims   = { repository_owner_id = "12?45" }`, "policy.hcl:5:16: "},
		{github, `    claims   = { repository = "*/app" }`, "policy.hcl:5:16: "},
		{github, `    claims   = { repository = "acme*/app" }`, "policy.hcl:5:16: "},
		{github, `    claims   = { sub = "repo:*" }`, "policy.hcl:5:16: "},
		{github, `    claims   = { sub = "repo:acme*" }`, "policy.hcl:5:16: "},
		{github, `    claims   = { sub = "*:acme/*" }`, "policy.hcl:5:16: "},
		{github, `    claims   = { job_workflow_ref = "acme/workflows/.github/workflows/plan.yml@*" }`, "policy.hcl:5:16: "},
		{github, `    claims   = { repository_owner = "acme" }`, ""},
		{github, `    claims   = { repository_owner_id = "12345", ref = "*" }`, ""},
		{github, `    claims   = { repository_owner_id = 12345 }`, ""},
		{github, `    claims   = { repository = "acme/*" }`, ""},
		{github, `    claims   = { repository_id = "678" }`, ""},
		{github, `    claims   = { sub = "repo:acme/*" }`, ""},
		{github, `    claims   = { sub = "repo:acme/app:ref:refs/heads/main" }`, ""},

		{gitlab, `    claims   = { ref = "main" }`, "policy.hcl:5:16: client \"c\": issuer " + gitlab + " signs tokens for every project on gitlab.com"},
		{gitlab, `    claims   = { namespace_path = "*" }`, "policy.hcl:5:16: "},
		{gitlab, `    claims   = { project_path = "plat*/app" }`, "policy.hcl:5:16: "},
		{gitlab, `    claims   = { sub = "project_path:*" }`, "policy.hcl:5:16: "},
		{gitlab, `    claims   = { namespace_path = "platform/*" }`, ""},
		{gitlab, `    claims   = { namespace_path = "platform" }`, ""},
		{gitlab, `    claims   = { namespace_id = "72" }`, ""},
		{gitlab, `    claims   = { project_path = "platform/app" }`, ""},
		{gitlab, `    claims   = { project_id = "5" }`, ""},
		{gitlab, `    claims   = { sub = "project_path:platform/*" }`, ""},

		// HCP Terraform and Buildkite sign for every organisation, and
		// their users set the audience.
		{hcp, `    claims   = { terraform_run_phase = "apply" }`, "policy.hcl:5:16: client \"c\": issuer " + hcp + " signs tokens for every HCP Terraform organization"},
		{hcp, `    claims   = { terraform_workspace_name = "prod" }`, "policy.hcl:5:16: "},
		{hcp, `    claims   = { sub = "organization:*:project:Default*" }`, "policy.hcl:5:16: "},
		{hcp, `    claims   = { sub = "organization:acme*" }`, "policy.hcl:5:16: "},
		{hcp, `    claims   = { terraform_organization_name = "acme" }`, ""},
		{hcp, `    claims   = { terraform_organization_id = "org-abc123" }`, ""},
		{hcp, `    claims   = { sub = "organization:acme:project:*" }`, ""},
		{buildkite, `    claims   = { pipeline_slug = "deploy" }`, "policy.hcl:5:16: client \"c\": issuer " + buildkite + " signs tokens for every Buildkite organization"},
		{buildkite, `    claims   = { sub = "organization:*:pipeline:deploy:*" }`, "policy.hcl:5:16: "},
		{buildkite, `    claims   = { organization_slug = "acme" }`, ""},
		{buildkite, `    claims   = { sub = "organization:acme:pipeline:deploy:*" }`, ""},
	} {
		body := block(c.issuer, c.claims)
		_, err := clientsPolicy(t, body)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s\n refused: %v", body, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s\n got %v\nwant %s…", body, err, c.want)
		}
	}
}

// Claims are matched by their JSON values, as the verifier decodes them:
// a string as itself, a number by its JSON text, a boolean as true or
// false, an array when any of its strings, numbers or booleans matches;
// an object, null or an array within an array never matches. Never Go's
// formatting of the value ("[a b]", "map[…]", "<nil>").
func TestClaimsMatchTheirJSONValues(t *testing.T) {
	for _, c := range []struct {
		claim, pattern, value string // value: the claim's JSON
		want                  bool
	}{
		{"repository_owner", "acme", `"acme"`, true},
		{"repository_owner_id", "12345", `12345`, true},
		{"repository_owner_id", "12345", `"12345"`, true},
		{"ratio", "1.50", `1.50`, true},
		{"ratio", "1.5", `1.50`, false},
		{"email_verified", "true", `true`, true},
		{"email_verified", "true", `false`, false},
		{"groups", "admins", `["dev", "admins"]`, true},
		{"groups", "adm*", `["dev", "admins"]`, true},
		{"groups", "12", `["dev", 12]`, true},
		{"groups", "ops", `["dev", "admins"]`, false},
		{"groups", "[dev admins]", `["dev", "admins"]`, false},
		{"groups", "*dev admins*", `["dev", "admins"]`, false},
		{"groups", "a", `[["a"]]`, false},
		{"groups", "*", `[]`, false},
		{"groups", "*", `[{"a": "b"}]`, false},
		{"kubernetes.io", "*", `{"namespace": "ci"}`, false},
		{"kubernetes.io", "map[*", `{"namespace": "ci"}`, false},
		{"nothing", "<nil>", `null`, false},
		{"nothing", "*", `null`, false},
	} {
		p, err := clientsPolicy(t, fmt.Sprintf(`
client "c" {
  oidc {
    issuer   = "https://ci.example"
    audience = "https://proxy.example"
    claims   = { sub = "me", %q = %q }
  }
}`, c.claim, c.pattern))
		if err != nil {
			t.Fatal(err)
		}
		claims := jsonClaims(t, fmt.Sprintf(`{"sub": "me", %q: %s}`, c.claim, c.value))
		if got, _ := p.ClientOfIdentity("https://ci.example", claims); (got != nil) != c.want {
			t.Errorf("%s = %q against %s: matched %v, want %v", c.claim, c.pattern, c.value, got != nil, c.want)
		}
	}
}

// jsonClaims decodes a token's claims as protocol/oidc does (numbers as
// json.Number).
func jsonClaims(t *testing.T, doc string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	var claims map[string]any
	if err := d.Decode(&claims); err != nil {
		t.Fatal(err)
	}
	return claims
}
