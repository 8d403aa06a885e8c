package proxy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// factsPolicy writes the public keys of signers (by file name) beside a
// policy file holding src, and loads it as serve --policy does.
func factsPolicy(t *testing.T, src string, keys map[string]*attest.Signer) *policy.Live {
	t.Helper()
	dir := t.TempDir()
	for name, s := range keys {
		pem, err := s.Public().PEM()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), pem, 0o644); err != nil {
			t.Fatal(err)
		}
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

// attestAt attests subject with s as push --attest-key does, the
// predicate saying it was verified (ingested) at at.
func attestAt(t *testing.T, repo oci.Repository, subject digest.Digest, s *attest.Signer, predicateType string, at time.Time) {
	t.Helper()
	pred := map[string]string{"verified_at": at.UTC().Format(time.RFC3339)}
	if predicateType == modulepkg.PredicateType {
		pred = map[string]string{"attested_at": at.UTC().Format(time.RFC3339)}
	}
	if _, err := attest.Attach(context.Background(), repo, "example.com/x", subject, s, predicateType, pred); err != nil {
		t.Fatal(err)
	}
}

// clock is a settable Options.Now.
type clock struct{ t atomic.Pointer[time.Time] }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.set(t)
	return c
}
func (c *clock) set(t time.Time)     { c.t.Store(&t) }
func (c *clock) now() time.Time      { return *c.t.Load() }
func (c *clock) add(d time.Duration) { c.set(c.now().Add(d)) }

func mirrorVersions(t *testing.T, p *proxy, path string) map[string]any {
	t.Helper()
	var idx struct{ Versions map[string]any }
	p.getJSON(t, path, 200, &idx)
	return idx.Versions
}

// min_age with a clock the test controls: a version younger than the
// cool-down is left out of both listings (the versions document says
// until when) and 404 when asked for; it is served as soon as the clock
// passes its ingest time plus min_age, without a restart, though every
// document was cached before. A version with no trusted ingest time is
// never served.
func TestPolicyMinAge(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	ours, theirs := attesttest.Signer(t), attesttest.Signer(t)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	attestAt(t, repo, pushAttested(t, repo, "1.0.0", nil), ours, pubrelease.ProviderPredicateType, t0.Add(-100*time.Hour))
	attestAt(t, repo, pushAttested(t, repo, "1.1.0", nil), ours, pubrelease.ProviderPredicateType, t0)
	attestAt(t, repo, pushAttested(t, repo, "2.0.0-rc1", nil), theirs, pubrelease.ProviderPredicateType, t0.Add(-1000*time.Hour))
	clk := newClock(t0.Add(time.Hour))
	pol := factsPolicy(t, `
provider "example.com/test/*" {
  name     = "cool-down"
  min_age  = "3d"
  signers  = ["attestation:org.pub"]
}`, map[string]*attest.Signer{"org.pub": ours})
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: pol, RegistryHostname: "example.com", Now: clk.now})

	const index = "/v1/mirror/example.com/test/hello/index.json"
	if vs := mirrorVersions(t, p, index); len(vs) != 1 || vs["1.0.0"] == nil {
		t.Fatalf("index.json at t0+1h lists %v, want only 1.0.0", vs)
	}
	var vd versionsDoc
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	if len(vd.Versions) != 1 || vd.Versions[0].Version != "1.0.0" {
		t.Fatalf("versions at t0+1h: %+v", vd.Versions)
	}
	if !containsWith(vd.Warnings, `1.1.0 is left out: example.com/test/hello 1.1.0 entered the registry at 2026-11-01T12:00:00Z and is younger than min_age = "3d" of the policy's rule "cool-down": it is served from 2026-11-04T12:00:00Z`) ||
		!containsWith(vd.Warnings, "2.0.0-rc1 is left out: example.com/test/hello 2.0.0-rc1 is not signed by attestation:org.pub") {
		t.Errorf("warnings %q", vd.Warnings)
	}
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, "provider example.com/test/hello 1.1.0 is not served: example.com/test/hello 1.1.0 entered the registry at 2026-11-01T12:00:00Z")
	p.wantError(t, "/v1/providers/test/hello/1.1.0/download/linux/amd64", 404, "younger than min_age")

	clk.add(71*time.Hour - time.Second) // a second short of aging in: all cached, all as before
	if vs := mirrorVersions(t, p, index); len(vs) != 1 {
		t.Errorf("index.json a second early lists %v", vs)
	}
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, "younger than min_age")

	clk.add(time.Second)
	if vs := mirrorVersions(t, p, index); len(vs) != 2 || vs["1.1.0"] == nil {
		t.Errorf("index.json once 1.1.0 aged in lists %v, want 1.0.0 and 1.1.0", vs)
	}
	vd = versionsDoc{}
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	if len(vd.Versions) != 2 {
		t.Errorf("versions once 1.1.0 aged in: %+v", vd.Versions)
	}
	p.getJSON(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 200, nil)
	p.getJSON(t, "/v1/providers/test/hello/1.1.0/download/linux/amd64", 200, nil)
	p.wantError(t, "/v1/mirror/example.com/test/hello/2.0.0-rc1.json", 404, "is not signed by attestation:org.pub")
}

// Without a key to trust an attestation's ingest time, min_age cannot be
// met: every version is denied, saying so. --require-attestation's keys
// are trusted for it.
func TestPolicyMinAgeNeedsTrustedIngestTime(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	ours := attesttest.Signer(t)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	attestAt(t, repo, pushAttested(t, repo, "1.0.0", nil), ours, pubrelease.ProviderPredicateType, t0.Add(-100*time.Hour))
	pushAttested(t, repo, "1.1.0", nil)
	pol := factsPolicy(t, `provider "example.com/test/hello" { min_age = "72h" }`, nil)
	opts := Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: pol, RegistryHostname: "example.com", Now: func() time.Time { return t0 }}
	p := startProxy(t, opts)
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 404, "has no known ingest time")
	p.wantError(t, "/v1/providers/test/hello/versions", 404, "has no known ingest time")

	opts.RequireAttestation = []*attest.Verifier{ours.Public()}
	p = startProxy(t, opts)
	if vs := mirrorVersions(t, p, "/v1/mirror/example.com/test/hello/index.json"); len(vs) != 1 || vs["1.0.0"] == nil {
		t.Errorf("index.json lists %v, want 1.0.0 (attested by a required key 100h ago)", vs)
	}
}

// Required signers: a publisher key (the key IDs push verified), an
// attestation key and a cosign key, all required when several are listed.
func TestPolicySigners(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	ours, theirs := attesttest.Signer(t), attesttest.Signer(t)
	attestAt(t, repo, pushAttested(t, repo, "1.0.0", nil), ours, pubrelease.ProviderPredicateType, time.Now())
	pushAttested(t, repo, "1.1.0", nil)
	attestAt(t, repo, pushAttested(t, repo, "2.0.0-rc1", nil), ours, pubrelease.ProviderPredicateType, time.Now())
	other := open("test", "other")
	attestAt(t, other, pushAttested(t, other, "1.0.0", nil), theirs, pubrelease.ProviderPredicateType, time.Now())
	attestAt(t, other, pushAttested(t, other, "1.1.0", nil), ours, pubrelease.ProviderPredicateType, time.Now()) // its .sig by our key
	// 1.0.0 and 1.1.0 of the fixture are signed by gpg-signer, 2.0.0-rc1
	// by gocrypto-signer.
	kr, err := pgp.LoadKeyring(testenv.Testdata(t, "keys", "gpg-signer.asc"))
	if err != nil {
		t.Fatal(err)
	}
	publisher := pgp.KeyID(kr.Entities[0].PrimaryKey.KeyId)
	// A release whose provenance claims the publisher's key though
	// another key signed it: its signature is verified again.
	forged := seed.HelloRelease(t, "2.0.0-rc1")
	forged.KeyIDs = []string{publisher}
	fa, err := forged.Artifact(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	push(t, open("forged", "hello"), fa, "2.0.0-rc1")
	pol := factsPolicy(t, `
provider "example.com/test/hello" {
  name    = "publisher-and-org"
  signers = ["publisher:`+publisher+`", "attestation:org.pub"]
}
provider "example.com/test/other" {
  signers = ["cosign:org.pub"]
}
provider "example.com/forged/hello" {
  signers = ["publisher:`+publisher+`"]
}`, map[string]*attest.Signer{"org.pub": ours})
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: pol, RegistryHostname: "example.com"})

	if vs := mirrorVersions(t, p, "/v1/mirror/example.com/test/hello/index.json"); len(vs) != 1 || vs["1.0.0"] == nil {
		t.Errorf("index.json lists %v, want only 1.0.0 (by the publisher, attested by us)", vs)
	}
	var vd versionsDoc
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	if len(vd.Versions) != 1 || vd.Versions[0].Version != "1.0.0" ||
		!containsWith(vd.Warnings, "1.1.0 is left out: example.com/test/hello 1.1.0 is not signed by attestation:org.pub") ||
		!containsWith(vd.Warnings, "2.0.0-rc1 is left out: example.com/test/hello 2.0.0-rc1 is not signed by publisher:"+publisher) {
		t.Errorf("versions %+v, warnings %q", vd.Versions, vd.Warnings)
	}
	p.getJSON(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 200, nil)
	p.wantError(t, "/v1/providers/test/hello/2.0.0-rc1/download/linux/amd64", 404, "is not signed by publisher:"+publisher+", which the policy's rule \"publisher-and-org\" requires")
	p.wantError(t, "/v1/mirror/example.com/test/other/1.0.0.json", 404, "is not signed by cosign:org.pub")
	p.wantError(t, "/v1/mirror/example.com/forged/hello/2.0.0-rc1.json", 404, "is not signed by publisher:"+publisher)
	if vs := mirrorVersions(t, p, "/v1/mirror/example.com/test/other/index.json"); len(vs) != 1 || vs["1.1.0"] == nil {
		t.Errorf("other's index.json lists %v, want 1.1.0 (signed by our key)", vs)
	}
}

// Modules and OpenTofu releases: the same rules by their roots (the
// module package's manifest, the release manifest).
func TestPolicyFactsModulesAndTofu(t *testing.T) {
	dir, open := moduleStore(t)
	repo := open("acme", "network", "aws")
	ours := attesttest.Signer(t)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for v, at := range map[string]time.Time{"1.0.0": t0.Add(-48 * time.Hour), "1.1.0": t0} {
		a := moduleArtifact(t, moduleZip(t, v))
		push(t, repo, a, v)
		attestAt(t, repo, a.Root().Digest, ours, modulepkg.PredicateType, at)
	}
	push(t, repo, moduleArtifact(t, moduleZip(t, "1.2.0")), "1.2.0") // not attested
	ref, trepo := tofuLayout(t)
	for v, at := range map[string]time.Time{"1.8.0": t0.Add(-48 * time.Hour), "1.9.0": t0} {
		pushTofuFixture(t, trepo, v)
		d, err := trepo.Resolve(context.Background(), v)
		if err != nil {
			t.Fatal(err)
		}
		attestAt(t, trepo, d.Digest, ours, pubrelease.TofuPredicateType, at)
	}
	clk := newClock(t0)
	pol := factsPolicy(t, `
module "*/acme/*/*" {
  signers = ["attestation:org.pub"]
  min_age = "24h"
}
tofu { min_age = "24h" }`, map[string]*attest.Signer{"org.pub": ours})
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+dir+"/${namespace}/${name}/${system}")}, TofuRepository: &ref, Policy: pol, Now: clk.now})

	var vs moduleVersionsDoc
	p.getJSON(t, "/v1/modules/acme/network/aws/versions", 200, &vs)
	if got := vs.list(); len(got) != 1 || got[0] != "1.0.0" {
		t.Errorf("module versions %v, want 1.0.0", got)
	}
	p.wantError(t, "/v1/modules/acme/network/aws/1.1.0/download", 404, "younger than min_age = \"24h\"")
	p.wantError(t, "/v1/modules/acme/network/aws/1.2.0/download", 404, "is not signed by attestation:org.pub")
	var api tofuAPIDoc
	p.getJSON(t, TofuAPIPath, 200, &api)
	if len(api.Versions) != 1 || api.Versions[0].ID != "1.8.0" {
		t.Errorf("api.json %+v, want 1.8.0", api.Versions)
	}
	p.wantError(t, "/tofu/download/v1.9.0/"+names.TofuSHA256SUMSName("1.9.0"), 404, "OpenTofu 1.9.0 is not served")

	clk.add(24 * time.Hour)
	vs = moduleVersionsDoc{}
	p.getJSON(t, "/v1/modules/acme/network/aws/versions", 200, &vs)
	if got := vs.list(); len(got) != 2 {
		t.Errorf("module versions after a day %v, want 1.0.0 and 1.1.0", got)
	}
	p.moduleDownload(t, "/v1/modules/acme/network/aws/1.1.0/download", nil)
	api = tofuAPIDoc{}
	p.getJSON(t, TofuAPIPath, 200, &api)
	if len(api.Versions) != 2 {
		t.Errorf("api.json after a day %+v", api.Versions)
	}
	if r := p.get(t, "/tofu/download/v1.9.0/"+names.TofuSHA256SUMSName("1.9.0")); r.Status != 200 {
		t.Errorf("1.9.0's SHA256SUMS after a day: %d", r.Status)
	}
}

// Rules on versions alone read nothing of a release's attachments.
func TestPolicyVersionRulesReadNoFacts(t *testing.T) {
	reg := testenv.StartRegistry(t)
	fp := newFaultProxy(t, reg)
	repo := registryRepo(t, reg, "test/hello")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		pushAttested(t, repo, v, nil)
	}
	opts := throughFaults()
	opts.ProviderMappings = mustMapping(t, fp.host()+"/${namespace}/${type}")
	opts.RegistryHostname = "example.com"
	opts.Policy = mustPolicy(t, `provider "example.com/test/hello" { versions = ">= 1.0" }`)
	p := startProxy(t, opts)
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, nil)
	p.getJSON(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 200, nil)
	if n := fp.count("GET /v2/test/hello/manifests/sha256-"); n != 0 {
		t.Errorf("a version-only policy read %d attachments", n)
	}
}

// A registry failing while the facts are read fails the request: it
// never decides.
func TestPolicyFactsRegistryFailure(t *testing.T) {
	reg := testenv.StartRegistry(t)
	fp := newFaultProxy(t, reg)
	repo := registryRepo(t, reg, "test/hello")
	ours := attesttest.Signer(t)
	attestAt(t, repo, pushAttested(t, repo, "1.0.0", nil), ours, pubrelease.ProviderPredicateType, time.Now())
	opts := throughFaults()
	opts.ProviderMappings = mustMapping(t, fp.host()+"/${namespace}/${type}")
	opts.RegistryHostname = "example.com"
	opts.Policy = factsPolicy(t, `provider "example.com/test/hello" { signers = ["attestation:org.pub"] }`, map[string]*attest.Signer{"org.pub": ours})
	p := startProxy(t, opts)
	p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, nil)
	if fp.count("GET /v2/test/hello/manifests/sha256-") == 0 {
		t.Fatal("the attestation was not read")
	}
	fp.mode.Store("500-attachments")
	for _, path := range []string{"/v1/mirror/example.com/test/hello/1.0.0.json", "/v1/mirror/example.com/test/hello/index.json", "/v1/providers/test/hello/versions", "/v1/providers/test/hello/1.0.0/download/linux/amd64"} {
		if r := p.get(t, path); r.Status < 500 {
			t.Errorf("%s with the attachments failing: %d %s, want a 5xx", path, r.Status, strings.TrimSpace(string(r.Body)))
		}
	}
}
