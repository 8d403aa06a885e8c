package e2e

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// registryDecision is one decision of `policy test --json` against the
// registry.
type registryDecision struct {
	Kind, Address, Version, Rule, Reason, Verdict string
	// Allow is the verdict (serve lists it); PolicyAllows the policy's
	// decision alone.
	Allow, Held  bool
	PolicyAllows bool `json:"policy_allows"`
	// Admission is serve's admission flags' word (given them).
	Admission *struct {
		Admitted bool
		Reason   string
	}
}

// served says whether serve lists the version, by policy test: the
// policy allows it and the admission flags, when given, admit it (what
// "allow" and the "allow" verdict must say too).
func (d registryDecision) served() bool {
	return d.PolicyAllows && (d.Admission == nil || d.Admission.Admitted)
}

// policyTestJSON runs policy test --json and returns its decisions.
func policyTestJSON(t *testing.T, args ...string) []registryDecision {
	t.Helper()
	out := mustRun(t, append([]string{"policy", "test", "--json"}, args...)...)
	var doc struct{ Decisions []registryDecision }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("policy test --json: %v\n%s", err, out)
	}
	return doc.Decisions
}

// servedVersions are the versions a serve listing offers: the keys of
// the network mirror's index.json, the module registry's versions, or
// the ids of TofuDL's api.json.
func servedVersions(t *testing.T, s *served, path string) []string {
	t.Helper()
	code, body := s.get(t, path)
	if code != 200 {
		t.Fatalf("%s: %d %s", path, code, body)
	}
	var doc struct {
		Versions json.RawMessage
		Modules  []struct{ Versions []struct{ Version string } }
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, body)
	}
	var mirror map[string]any
	var releases []struct{ ID string }
	if json.Unmarshal(doc.Versions, &mirror) != nil && json.Unmarshal(doc.Versions, &releases) != nil && doc.Versions != nil {
		t.Fatalf("%s: versions are neither a map nor a list: %s", path, body)
	}
	out := slices.Collect(maps.Keys(mirror))
	for _, r := range releases {
		out = append(out, r.ID)
	}
	for _, m := range doc.Modules {
		for _, v := range m.Versions {
			out = append(out, v.Version)
		}
	}
	slices.Sort(out)
	return out
}

// policy test against the registry, differentially against serve: for
// the same registry, mappings and policy (a cosign signer, an
// attestation signer, version constraints, a module rule over two merged
// module templates, a tofu rule), policy test
// decides every version the registry holds, and the ones it allows are
// exactly the ones serve lists — the others denied with the deciding rule
// and the reason serve gives.
func TestPolicyTestAgainstRegistry(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key, pub := cosignKeyPair(t)
	attestKey, attestPub := ecdsaKeyPair(t)
	signed := reg.Host + "/providers/signed/hello"
	pushHello(t, signed, "1.0.0", "1.1.0", "2.0.0-rc1")
	d := trimSpace(testenv.MustRun(t, "", append(testenvEnv(t), "SSL_CERT_FILE="+reg.CA.CertFile), testenv.Tool(t, "crane"), "digest", signed+":1.0.0"))
	if out, err := cosign(t, append(append([]string{"sign", "--key", key, "--yes"}, cosignModes(t)["bundle"]...), signed+"@"+d)...); err != nil {
		t.Fatalf("cosign sign: %v\n%s", err, out)
	}
	attested := reg.Host + "/providers/attested/hello"
	pushHello(t, attested, "1.0.0")
	pushAttested(t, attestKey, attested, "1.1.0")
	module := reg.Host + "/modules/acme/greeting/aws"
	src := testenv.Testdata(t, "modules", "greeting")
	mustRun(t, "push", "module", "--quiet", "--attest-key", attestKey, src, module+":1.0.0")
	changed := t.TempDir() // another package than 1.0.0's, not attested
	writeFiles(t, changed, map[string]string{"main.tf": "output \"greeting\" { value = \"hello again\" }\n"})
	mustRun(t, "push", "module", "--quiet", changed, module+":1.1.0")
	// A second module template, merged after the first: it holds 1.1.0
	// attested (served from it, the first's copy being denied) and 1.2.0
	// not attested.
	module2 := reg.Host + "/modules2/acme/greeting/aws"
	mustRun(t, "push", "module", "--quiet", "--attest-key", attestKey, changed, module2+":1.1.0")
	writeFiles(t, changed, map[string]string{"main.tf": "output \"greeting\" { value = \"hello once more\" }\n"})
	mustRun(t, "push", "module", "--quiet", changed, module2+":1.2.0")
	tofuRepo := reg.Host + "/tools/opentofu"
	mustRun(t, "push", "tofu", "--quiet", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), "--attest-key", attestKey, testenv.Testdata(t, "tofu", "1.8.0"), tofuRepo)
	mustRun(t, "push", "tofu", "--quiet", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "tofu", "1.9.0"), tofuRepo)
	file := factsPolicyFile(t, `
provider "example.com/signed/*" {
  name     = "cosigned"
  versions = ">= 1.0"
  signers  = ["cosign:keys/cosign.pub"]
}
provider "example.com/attested/*" {
  name    = "attested"
  signers = ["attestation:keys/org.pub"]
}
module "*/acme/*/*" {
  name    = "org-modules"
  signers = ["attestation:keys/org.pub"]
}
tofu {
  name    = "org-tofu"
  signers = ["attestation:keys/org.pub"]
}
`, map[string]string{"keys/cosign.pub": pub, "keys/org.pub": attestPub})
	mapping := []string{"--provider-template", reg.Host + "/providers/${namespace}/${type}", "--module-template", reg.Host + "/modules/${namespace}/${name}/${system}",
		"--module-template", reg.Host + "/modules2/${namespace}/${name}/${system}", "--tofu-repository", tofuRepo}
	s := startServe(t, append(mapping, "--policy", file)...)
	queries := []struct{ query, listing string }{
		{"example.com/signed/hello", "/v1/mirror/example.com/signed/hello/index.json"},
		{"example.com/attested/hello", "/v1/mirror/example.com/attested/hello/index.json"},
		{"localhost/acme/greeting/aws", "/v1/modules/acme/greeting/aws/versions"},
		{"tofu", "/tofu/api.json"},
	}
	for _, c := range queries {
		t.Run(c.query, func(t *testing.T) {
			for _, d := range comparePolicyTest(t, s, c.query, c.listing, append([]string{"--policy", file}, mapping...)) {
				if d.Admission != nil {
					t.Errorf("an admission verdict without admission flags: %+v", d)
				}
			}
		})
	}

	// With serve's --require-attestation (the attestation key): policy
	// test also says what admission leaves out, and what it allows is
	// still exactly what serve lists. example.com/signed/hello 1.0.0 is
	// cosigned (the policy allows it) but not attested (refused).
	admission := append(slices.Clone(mapping), "--require-attestation", attestPub)
	sa := startServe(t, append(admission, "--policy", file)...)
	var refused []registryDecision
	for _, c := range queries {
		t.Run("admission "+c.query, func(t *testing.T) {
			for _, d := range comparePolicyTest(t, sa, c.query, c.listing, append([]string{"--policy", file}, admission...)) {
				if d.PolicyAllows && d.Admission == nil {
					t.Errorf("%s %s: allowed, no admission verdict: %+v", d.Address, d.Version, d)
				}
				if d.Verdict == "refuse" {
					if d.Allow || !d.PolicyAllows {
						t.Errorf("%s %s: refused, yet allow %v and policy_allows %v", d.Address, d.Version, d.Allow, d.PolicyAllows)
					}
					refused = append(refused, d)
				}
			}
		})
	}
	if len(refused) != 1 || refused[0].Address != "example.com/signed/hello" || refused[0].Version != "1.0.0" ||
		!strings.Contains(refused[0].Admission.Reason, "no attestation verifying with the configured keys") {
		t.Errorf("refused by admission alone: %+v, want example.com/signed/hello 1.0.0", refused)
	}
	_, body := sa.get(t, "/v1/mirror/example.com/signed/hello/1.0.0.json")
	if len(refused) > 0 && !strings.Contains(string(body), refused[0].Admission.Reason) {
		t.Errorf("serve's 404 for 1.0.0 does not give policy test's reason %q: %s", refused[0].Admission.Reason, body)
	}
	out := mustRun(t, append(append([]string{"policy", "test", "--policy", file}, admission...), "example.com/signed/hello@1.0.0", "example.com/attested/hello@1.1.0")...)
	for _, want := range []string{
		`refuse  provider example.com/signed/hello@1.0.0  rule "cosigned": example.com/signed/hello 1.0.0 is allowed by the policy's rule "cosigned"; not admitted: no attestation verifying with the configured keys`,
		`allow  provider example.com/attested/hello@1.1.0  rule "attested": example.com/attested/hello 1.1.0 is allowed by the policy's rule "attested"; admitted`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("policy test with --require-attestation does not say %q:\n%s", want, out)
		}
	}

	// Each denial carries the rule and the reason serve gives a client.
	out = mustRun(t, append(append([]string{"policy", "test", "--policy", file}, mapping...), "example.com/signed/hello@1.1.0", "example.com/signed/hello@1.0.0", "example.com/signed/hello@2.0.0-rc1", "localhost/acme/greeting/aws@1.1.0", "localhost/acme/greeting/aws@1.2.0")...)
	for _, want := range []string{
		`deny   provider example.com/signed/hello@1.1.0  rule "cosigned": example.com/signed/hello 1.1.0 is not signed by cosign:keys/cosign.pub`,
		`allow  provider example.com/signed/hello@1.0.0  rule "cosigned"`,
		`deny   provider example.com/signed/hello@2.0.0-rc1  rule "cosigned"`,
		`allow  module localhost/acme/greeting/aws@1.1.0  rule "org-modules"`,
		`deny   module localhost/acme/greeting/aws@1.2.0  rule "org-modules": localhost/acme/greeting/aws 1.2.0 is not signed by attestation:keys/org.pub`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("policy test does not say %q:\n%s", want, out)
		}
	}
	_, body = s.get(t, "/v1/mirror/example.com/signed/hello/1.1.0.json")
	if reason := "example.com/signed/hello 1.1.0 is not signed by cosign:keys/cosign.pub"; !strings.Contains(string(body), reason) {
		t.Errorf("serve's 404 for 1.1.0 does not give policy test's reason %q: %s", reason, body)
	}
	if strings.Contains(out, "depends") {
		t.Errorf("policy test against the registry says depends:\n%s", out)
	}
}

// comparePolicyTest runs policy test --json with args on query, against
// the listing of serve s: every decision is on a held version with its
// rule and reason, and the versions it says serve lists are exactly those
// s lists. It returns the decisions.
func comparePolicyTest(t *testing.T, s *served, query, listing string, args []string) []registryDecision {
	t.Helper()
	served := servedVersions(t, s, listing)
	var allowed, left []string
	decisions := policyTestJSON(t, append(args, query)...)
	for _, d := range decisions {
		if !d.Held || d.Rule == "" || d.Reason == "" {
			t.Errorf("decision without what it decided on: %+v", d)
		}
		if d.Allow != d.served() || d.Allow != (d.Verdict == "allow") {
			t.Errorf("allow %v, verdict %q, yet serve would list it: %v: %+v", d.Allow, d.Verdict, d.served(), d)
		}
		if d.served() {
			allowed = append(allowed, d.Version)
		} else {
			left = append(left, d.Version)
		}
	}
	slices.Sort(allowed)
	if !slices.Equal(allowed, served) || len(left) == 0 {
		t.Errorf("policy test serves %v and leaves out %v; serve lists %v", allowed, left, served)
	}
	return decisions
}
