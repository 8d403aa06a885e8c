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
	Kind, Address, Version, Rule, Reason string
	Allow, Held                          bool
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

	for _, c := range []struct{ query, listing string }{
		{"example.com/signed/hello", "/v1/mirror/example.com/signed/hello/index.json"},
		{"example.com/attested/hello", "/v1/mirror/example.com/attested/hello/index.json"},
		{"localhost/acme/greeting/aws", "/v1/modules/acme/greeting/aws/versions"},
		{"tofu", "/tofu/api.json"},
	} {
		t.Run(c.query, func(t *testing.T) {
			served := servedVersions(t, s, c.listing)
			var allowed, denied []string
			for _, d := range policyTestJSON(t, append(append([]string{"--policy", file}, mapping...), c.query)...) {
				if !d.Held || d.Rule == "" || d.Reason == "" {
					t.Errorf("decision without what it decided on: %+v", d)
				}
				if d.Allow {
					allowed = append(allowed, d.Version)
				} else {
					denied = append(denied, d.Version)
				}
			}
			slices.Sort(allowed)
			if !slices.Equal(allowed, served) || len(denied) == 0 || len(allowed) == 0 {
				t.Errorf("policy test allows %v and denies %v; serve lists %v", allowed, denied, served)
			}
		})
	}

	// Each denial carries the rule and the reason serve gives a client.
	out := mustRun(t, append(append([]string{"policy", "test", "--policy", file}, mapping...), "example.com/signed/hello@1.1.0", "example.com/signed/hello@1.0.0", "example.com/signed/hello@2.0.0-rc1", "localhost/acme/greeting/aws@1.1.0", "localhost/acme/greeting/aws@1.2.0")...)
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
	_, body := s.get(t, "/v1/mirror/example.com/signed/hello/1.1.0.json")
	if reason := "example.com/signed/hello 1.1.0 is not signed by cosign:keys/cosign.pub"; !strings.Contains(string(body), reason) {
		t.Errorf("serve's 404 for 1.1.0 does not give policy test's reason %q: %s", reason, body)
	}
	if strings.Contains(out, "depends") {
		t.Errorf("policy test against the registry says depends:\n%s", out)
	}
}
