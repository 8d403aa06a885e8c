package e2e

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/sigstoretest"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// min_age reads ingest times from the Sigstore bundles cosign v3 stores
// as referrers (no .att tag), by the keys and keyless identities the
// policy file trusts: of releases attested with the real `cosign attest
// --key` (its default format) with an oci-tofu predicate, the one
// ingested 100 hours ago is served under min_age = "72h", the one
// ingested now is younger than it, the one attested long ago by a key
// nobody trusts has no ingest time; of releases attested keylessly (from
// CI, docs/guide-ci.md), the trusted workflow's counts and another
// workflow's does not. serve and `policy test` against the registry
// decide alike.
func TestPolicyMinAgeFromBundles(t *testing.T) {
	reg := testenv.StartRegistry(t)
	env := append(testenvEnv(t), "SSL_CERT_FILE="+reg.CA.CertFile)
	now := time.Now().UTC()
	digest := func(ref string) string {
		return trimSpace(testenv.MustRun(t, "", env, testenv.Tool(t, "crane"), "digest", ref))
	}

	keyed := reg.Host + "/keyed/test/hello"
	pushHello(t, keyed, "1.0.0", "1.1.0", "2.0.0-rc1")
	ours, oursPub := cosignKeyPair(t)
	theirs, _ := cosignKeyPair(t)
	mode := cosignModes(t)["bundle"]
	for v, by := range map[string]struct {
		key string
		at  time.Time
	}{"1.0.0": {ours, now.Add(-100 * time.Hour)}, "1.1.0": {ours, now}, "2.0.0-rc1": {theirs, now.Add(-1000 * time.Hour)}} {
		pred := filepath.Join(t.TempDir(), "predicate.json")
		writeFile(t, pred, `{"verified_at":"`+by.at.Format(time.RFC3339)+`"}`)
		args := append(append([]string{"attest", "--key", by.key}, mode...), "--type", release.ProviderPredicateType, "--predicate", pred, keyed+"@"+digest(keyed+":"+v))
		if out, err := cosign(t, args...); err != nil {
			t.Fatalf("cosign attest %s: %v\n%s", v, err, out)
		}
	}
	if tags := testenv.MustRun(t, "", env, testenv.Tool(t, "crane"), "ls", keyed); strings.Contains(tags, ".att") {
		t.Fatalf("cosign wrote .att tags, not bundles only:\n%s", tags)
	}

	unkeyed := reg.Host + "/keyless/test/hello"
	pushHello(t, unkeyed, "1.0.0", "1.1.0")
	sig := sigstoretest.New(t)
	for v, identity := range map[string]string{"1.0.0": releaseWorkflow, "1.1.0": forkWorkflow} {
		d := digest(unkeyed + ":" + v)
		attachBundle(t, env, unkeyed+"@"+d, sig.Attest(t, ghIssuer, identity, ingestStatement(t, unkeyed, d, now.Add(-100*time.Hour)), sigstoretest.Opts{}))
	}

	// The provider rule has min_age alone; the module rule's signers are
	// whom the file trusts for ingest times.
	file := factsPolicyFile(t, `
trusted_root = "sigstore/trusted_root.json"
provider "*/*/*" {
  name    = "cool-down"
  min_age = "72h"
}
module "*/*/*/*" {
  signers = ["attestation:keys/org.pub", "keyless:`+ghIssuer+"="+releaseWorkflow+`"]
}
`, map[string]string{"keys/org.pub": oursPub, "sigstore/trusted_root.json": sig.Root})

	// serve's own trust counts too: --require-attestation keyless:…
	// (1.1.0, attested by another identity, has no ingest time either).
	coolDown := factsPolicyFile(t, `provider "*/*/*" {
  name    = "cool-down"
  min_age = "72h"
}`, nil)
	requireKeyless := []string{"--require-attestation", "keyless:" + ghIssuer + "=" + releaseWorkflow, "--trusted-root", sig.Root}

	for _, c := range []struct {
		name, path, policy string
		trust              []string
		allowed            []string
		denied             map[string]string
	}{
		{"keyed", "keyed", file, nil, []string{"1.0.0"}, map[string]string{
			"1.1.0":     "entered the registry at " + now.Format(time.RFC3339) + " and is younger than min_age",
			"2.0.0-rc1": "has no known ingest time",
		}},
		{"keyless", "keyless", file, nil, []string{"1.0.0"}, map[string]string{"1.1.0": "has no known ingest time"}},
		{"keyless required by serve", "keyless", coolDown, requireKeyless, []string{"1.0.0"}, map[string]string{"1.1.0": "has no known ingest time"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			mapping := append([]string{"--provider-template", reg.Host + "/" + c.path + "/${namespace}/${type}"}, c.trust...)
			s := startServe(t, append(mapping, "--policy", c.policy)...)
			if served := servedVersions(t, s, "/v1/mirror/example.com/test/hello/index.json"); !slices.Equal(served, c.allowed) {
				t.Errorf("serve lists %v, want %v", served, c.allowed)
			}
			for v, why := range c.denied {
				code, body := s.get(t, "/v1/mirror/example.com/test/hello/"+v+".json")
				if code != 404 || !strings.Contains(string(body), why) {
					t.Errorf("%s.json: %d %s, want 404 saying %q", v, code, body, why)
				}
			}
			var allowed []string
			for _, d := range policyTestJSON(t, append(append([]string{"--policy", c.policy}, mapping...), "example.com/test/hello")...) {
				if d.Allow {
					allowed = append(allowed, d.Version)
				} else if why := c.denied[d.Version]; why == "" || !strings.Contains(d.Reason, why) {
					t.Errorf("policy test denies %s: %s, want %q", d.Version, d.Reason, why)
				}
			}
			if !slices.Equal(allowed, c.allowed) {
				t.Errorf("policy test allows %v, serve %v", allowed, c.allowed)
			}
		})
	}
}

// ingestStatement is an oci-tofu provider statement about d in repo
// saying it was verified (ingested) at at.
func ingestStatement(t *testing.T, repo, d string, at time.Time) []byte {
	t.Helper()
	b, err := json.Marshal(attest.Statement{
		Type:          attest.StatementType,
		Subject:       []attest.Subject{{Name: repo, Digest: map[string]string{"sha256": strings.TrimPrefix(d, "sha256:")}}},
		PredicateType: release.ProviderPredicateType,
		Predicate:     json.RawMessage(`{"verified_at":"` + at.UTC().Format(time.RFC3339) + `"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
