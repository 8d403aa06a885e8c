package proxy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// realCosign runs the real cosign v3 CLI offline against reg: key pairs
// encrypted with a test password, attestations stored its default way (a
// Sigstore bundle referrer; Distribution lists it under the referrers tag
// schema) with a signing config that names no transparency log.
type realCosign struct {
	env           []string
	signingConfig string
}

func newRealCosign(t *testing.T, reg *testenv.Registry) *realCosign {
	t.Helper()
	c := &realCosign{env: append(os.Environ(), "SSL_CERT_FILE="+reg.CA.CertFile, "COSIGN_PASSWORD=test-password",
		"TUF_ROOT="+t.TempDir(), "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())}
	c.signingConfig = filepath.Join(t.TempDir(), "signing-config.json")
	c.run(t, "signing-config", "create", "--out", c.signingConfig)
	return c
}

func (c *realCosign) run(t *testing.T, args ...string) string {
	t.Helper()
	return testenv.MustRun(t, t.TempDir(), c.env, testenv.Tool(t, "cosign"), args...)
}

// keyPair makes a key pair (cosign generate-key-pair): the private key's
// file and the public key's.
func (c *realCosign) keyPair(t *testing.T) (key, pub string) {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "cosign")
	c.run(t, "generate-key-pair", "--output-key-prefix", prefix)
	return prefix + ".key", prefix + ".pub"
}

// attest attests ref with key (cosign attest --key) with an oci-tofu
// provider predicate saying the release was ingested (verified) at at.
func (c *realCosign) attest(t *testing.T, key, ref string, at time.Time) {
	t.Helper()
	pred := filepath.Join(t.TempDir(), "predicate.json")
	if err := os.WriteFile(pred, []byte(`{"verified_at":"`+at.UTC().Format(time.RFC3339)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c.run(t, "attest", "--key", key, "--signing-config", c.signingConfig, "--type", pubrelease.ProviderPredicateType, "--predicate", pred, ref)
}

// min_age reads the ingest time from oci-tofu attestations the real
// cosign v3 stores as Sigstore bundle referrers (cosign attest --key, its
// default: no .att tag), by a key the policy trusts, with a clock the
// test controls: a version attested 100 hours ago is served, one attested
// now is left out until it ages in three days later (no restart), and one
// attested long ago by a key nobody trusts has no ingest time and is
// never served.
func TestPolicyMinAgeFromCosignBundles(t *testing.T) {
	reg := testenv.StartRegistry(t)
	cosign := newRealCosign(t, reg)
	ours, oursPub := cosign.keyPair(t)
	theirs, _ := cosign.keyPair(t)
	repo := registryRepo(t, reg, "p/test/hello")
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	attested := map[string]digest.Digest{}
	for v, by := range map[string]struct {
		key string
		at  time.Time
	}{"1.0.0": {ours, t0.Add(-100 * time.Hour)}, "1.1.0": {ours, t0}, "2.0.0-rc1": {theirs, t0.Add(-1000 * time.Hour)}} {
		d := pushAttested(t, repo, v, nil)
		cosign.attest(t, by.key, reg.Host+"/p/test/hello@"+d.String(), by.at)
		attested[v] = d
	}
	for v, d := range attested { // bundles only: cosign wrote no .att tag
		refs, err := attach.ReadReferrers(context.Background(), repo, d, attach.ArtifactTypeSigstoreBundle)
		layers, attErr := attach.ReadAttachment(context.Background(), repo, d, attach.CosignAttestations)
		if err != nil || len(refs.Items) != 1 || attErr != nil || len(layers) != 0 {
			t.Fatalf("%s: %d bundle referrers (%v), %d .att layers (%v): want 1 and none", v, len(refs.Items), err, len(layers), attErr)
		}
	}
	// The provider rule has only min_age; the module rule's attestation:
	// signer makes the file trust cosign's key for ingest times.
	pol := cosignPolicy(t, `
provider "example.com/test/*" {
  name    = "cool-down"
  min_age = "3d"
}
module "*/*/*/*" { signers = ["attestation:org.pub"] }
`, oursPub)
	clk := newClock(t0.Add(time.Hour))
	p := startProxy(t, Options{Client: registryClient(t, reg), ProviderMappings: mustMapping(t, reg.Host+"/p/${namespace}/${type}"),
		Policy: pol, RegistryHostname: "example.com", Now: clk.now})

	const index = "/v1/mirror/example.com/test/hello/index.json"
	if vs := mirrorVersions(t, p, index); len(vs) != 1 || vs["1.0.0"] == nil {
		t.Fatalf("index.json at t0+1h lists %v, want only 1.0.0 (attested 100h before t0)", vs)
	}
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, `example.com/test/hello 1.1.0 entered the registry at 2026-11-01T12:00:00Z and is younger than min_age = "3d" of the policy's rule "cool-down": it is served from 2026-11-04T12:00:00Z`)
	p.wantError(t, "/v1/mirror/example.com/test/hello/2.0.0-rc1.json", 404, "example.com/test/hello 2.0.0-rc1 has no known ingest time")

	clk.add(71 * time.Hour) // t0+72h: 1.1.0 ages in
	if vs := mirrorVersions(t, p, index); len(vs) != 2 || vs["1.1.0"] == nil {
		t.Errorf("index.json once 1.1.0 aged in lists %v, want 1.0.0 and 1.1.0", vs)
	}
	p.getJSON(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 200, nil)
	p.wantError(t, "/v1/mirror/example.com/test/hello/2.0.0-rc1.json", 404, "has no known ingest time")

	// policy test against the registry (serve's Server.ExplainPolicy)
	// decides the same.
	verdicts, err := p.ExplainPolicy(context.Background(), names.KindProvider, "example.com/test/hello", "")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, v := range verdicts {
		allowed[v.Version] = v.Allow
	}
	if !allowed["1.0.0"] || !allowed["1.1.0"] || allowed["2.0.0-rc1"] || len(allowed) != 3 {
		t.Errorf("ExplainPolicy: %+v, want 1.0.0 and 1.1.0 allowed, 2.0.0-rc1 denied", verdicts)
	}
}

// cosignPolicy loads a policy (src) whose org.pub is the public key file
// pub, as serve --policy does.
func cosignPolicy(t *testing.T, src, pub string) *policy.Live {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "org.pub"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "policy.hcl")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return policy.NewLive(p)
}

// The ingest time is the earliest of the bundles' and the .att tag's, so
// the registry failing to list the referrers fails the request even when
// the .att tag reads fine: a time from the tag alone might be later than
// a bundle's, and a registry failure never decides.
func TestPolicyMinAgeReferrersFailure(t *testing.T) {
	reg := testenv.StartRegistry(t)
	fp := newFaultProxy(t, reg)
	repo := registryRepo(t, reg, "test/hello")
	ours := attesttest.Signer(t)
	attestAt(t, repo, pushAttested(t, repo, "1.0.0", nil), ours, pubrelease.ProviderPredicateType, time.Now().Add(-100*time.Hour))
	opts := throughFaults()
	opts.ProviderMappings = mustMapping(t, fp.host()+"/${namespace}/${type}")
	opts.RegistryHostname = "example.com"
	opts.Policy = factsPolicy(t, `
provider "example.com/test/hello" { min_age = "72h" }
module "*/*/*/*" { signers = ["attestation:org.pub"] }
`, map[string]*attest.Signer{"org.pub": ours})
	p := startProxy(t, opts)
	p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, nil)
	fp.mode.Store("500-referrers")
	for _, path := range []string{"/v1/mirror/example.com/test/hello/1.0.0.json", "/v1/mirror/example.com/test/hello/index.json", "/v1/providers/test/hello/versions"} {
		if r := p.get(t, path); r.Status < 500 {
			t.Errorf("%s with the referrers failing: %d %s, want a 5xx", path, r.Status, strings.TrimSpace(string(r.Body)))
		}
	}
	if fp.count("GET /v2/test/hello/manifests/sha256-") == 0 {
		t.Error("no referrers were read")
	}
}
