package policy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// writeKey writes a PEM public key to dir/name.
func writeKey(t *testing.T, dir, name string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
}

const factsPolicy = `
default = "deny"
provider "registry.opentofu.org/hashicorp/*" {
  versions = ">= 5.0.0"
  min_age  = "72h"
  signers  = ["publisher:0x72D7468F 34365D94 72D7468F 34365D94 72D7468F", "attestation:keys/org.pub"]
}
provider "example.com/*/*" { min_age = "1d12h" }
module "tofu.example.com/platform/*/*" { signers = ["cosign:keys/cosign.pub"] }
tofu { versions = ">= 1.9.0" }
`

func loadFacts(t *testing.T) *Policy {
	t.Helper()
	dir := t.TempDir()
	writeKey(t, dir, "keys/org.pub")
	writeKey(t, dir, "keys/cosign.pub")
	file := filepath.Join(dir, "policy.hcl")
	if err := os.WriteFile(file, []byte(factsPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(file) // key paths are relative to the file, not the working directory
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNeeds(t *testing.T) {
	p := loadFacts(t)
	n := p.Needs(names.KindProvider, "registry.opentofu.org/hashicorp/aws")
	if n.MinAge != 72*time.Hour || len(n.Signers) != 2 || !n.Any() {
		t.Fatalf("needs: %+v", n)
	}
	if s := n.Signers[0]; s.Kind != SignerPublisher || s.KeyID != "34365D9472D7468F" {
		t.Errorf("a fingerprint with spaces and 0x is matched by its key ID: %+v", s)
	}
	if s := n.Signers[1]; s.Kind != SignerAttestation || s.Key == nil {
		t.Errorf("attestation key not read: %+v", s)
	}
	if n := p.Needs(names.KindProvider, "example.com/a/b"); n.MinAge != 36*time.Hour || len(n.Signers) != 0 {
		t.Errorf("1d12h: %+v", n)
	}
	for _, c := range []struct {
		kind    names.Kind
		address string
	}{{names.KindTofu, "tofu"}, {names.KindProvider, "other.example/a/b"}} {
		if n := p.Needs(c.kind, c.address); n.Any() {
			t.Errorf("%s %s needs facts: %+v", c.kind, c.address, n)
		}
	}
	var none *Policy
	if none.Needs(names.KindProvider, "a/b/c").Any() {
		t.Error("nil policy needs facts")
	}
}

func TestDecideWith(t *testing.T) {
	p := loadFacts(t)
	const aws = "registry.opentofu.org/hashicorp/aws"
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	both := map[string]bool{"publisher:0x72D7468F 34365D94 72D7468F 34365D94 72D7468F": true, "attestation:keys/org.pub": true}
	old := now.Add(-73 * time.Hour)
	for _, c := range []struct {
		name    string
		version string
		f       Facts
		allow   bool
		reason  string
		agesIn  time.Time
	}{
		{"signed and aged", "5.1.0", Facts{Ingested: old, Signed: both}, true, "allowed by the policy's rule", time.Time{}},
		{"versions first", "4.0.0", Facts{Ingested: old, Signed: both}, false, "does not meet versions", time.Time{}},
		{"one signer missing", "5.1.0", Facts{Ingested: old, Signed: map[string]bool{"attestation:keys/org.pub": true}}, false, "is not signed by publisher:", time.Time{}},
		{"no signer", "5.1.0", Facts{Ingested: old}, false, "is not signed by", time.Time{}},
		{"too young", "5.1.0", Facts{Ingested: now.Add(-time.Hour), Signed: both}, false, "younger than min_age = \"72h\"", now.Add(71 * time.Hour)},
		{"exactly aged", "5.1.0", Facts{Ingested: now.Add(-72 * time.Hour), Signed: both}, true, "", time.Time{}},
		{"unknown ingest", "5.1.0", Facts{Signed: both}, false, "has no known ingest time", time.Time{}},
	} {
		d := p.DecideWith(names.KindProvider, aws, c.version, c.f, now)
		if d.Allow != c.allow || !strings.Contains(d.Reason, c.reason) || !d.AgesIn.Equal(c.agesIn) || d.Rule != "registry.opentofu.org/hashicorp/*" {
			t.Errorf("%s: %+v", c.name, d)
		}
	}
	// The clock decides: the same facts are denied, then allowed.
	f := Facts{Ingested: now, Signed: map[string]bool{}}
	if d := p.DecideWith(names.KindProvider, "example.com/a/b", "1.0.0", f, now.Add(36*time.Hour-time.Second)); d.Allow {
		t.Errorf("before 1d12h: %+v", d)
	}
	if d := p.DecideWith(names.KindProvider, "example.com/a/b", "1.0.0", f, now.Add(36*time.Hour)); !d.Allow {
		t.Errorf("after 1d12h: %+v", d)
	}
	// Rules without facts, the default, and a nil policy ignore them.
	if d := p.DecideWith(names.KindTofu, "tofu", "1.9.0", Facts{}, now); !d.Allow {
		t.Errorf("tofu: %+v", d)
	}
	if d := p.DecideWith(names.KindProvider, "other.example/a/b", "1.0.0", Facts{}, now); d.Allow || d.Rule != DefaultRule {
		t.Errorf("default: %+v", d)
	}
	var none *Policy
	if d := none.DecideWith(names.KindProvider, aws, "1.0.0", Facts{}, now); !d.Allow {
		t.Errorf("nil: %+v", d)
	}
	// A module needs its cosign signer.
	mod := "tofu.example.com/platform/vpc/aws"
	if d := p.DecideWith(names.KindModule, mod, "1.0.0", Facts{}, now); d.Allow || !strings.Contains(d.Reason, "cosign:keys/cosign.pub") {
		t.Errorf("unsigned module: %+v", d)
	}
	if d := p.DecideWith(names.KindModule, mod, "1.0.0", Facts{Signed: map[string]bool{"cosign:keys/cosign.pub": true}}, now); !d.Allow {
		t.Errorf("signed module: %+v", d)
	}
}

func TestDecideOffline(t *testing.T) {
	p := loadFacts(t)
	const aws = "registry.opentofu.org/hashicorp/aws"
	d := p.DecideOffline(names.KindProvider, aws, "5.1.0")
	if d.Allow || strings.Join(d.DependsOn, ",") != "min_age,signers" || !strings.Contains(d.Reason, "depends on what the registry holds") {
		t.Errorf("facts rule offline: %+v", d)
	}
	if d := p.DecideOffline(names.KindProvider, aws, "4.0.0"); d.Allow || d.DependsOn != nil || !strings.Contains(d.Reason, "does not meet") {
		t.Errorf("a version the versions deny is denied offline: %+v", d)
	}
	if d := p.DecideOffline(names.KindTofu, "tofu", "1.9.0"); !d.Allow || d.DependsOn != nil {
		t.Errorf("version-only rule offline: %+v", d)
	}
	// Decide itself keeps its version-only behaviour.
	if d := p.Decide(names.KindProvider, aws, "5.1.0"); !d.Allow {
		t.Errorf("Decide: %+v", d)
	}
}

func TestParseFactErrors(t *testing.T) {
	dir := t.TempDir()
	writeKey(t, dir, "org.pub")
	if err := os.WriteFile(filepath.Join(dir, "junk.pub"), []byte("not a key"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "policy.hcl")
	for _, c := range []struct{ name, src, want string }{
		{"bad duration", "provider \"a/b\" {\n  min_age = \"3 days\"\n}", "policy.hcl:2:13: min_age \"3 days\" is not a duration"},
		{"negative", `provider "a/b" { min_age = "-1h" }`, "policy.hcl:1:28: min_age \"-1h\""},
		{"zero", `provider "a/b" { min_age = "0s" }`, "must be positive"},
		{"too long", `provider "a/b" { min_age = "99999d" }`, "at most 3650d"},
		{"number", `provider "a/b" { min_age = 72 }`, "is not a duration"},
		{"not a list", `provider "a/b" { signers = "publisher:34365D9472D7468F" }`, "policy.hcl:1:29: Unsuitable value type"},
		{"no kind", `provider "a/b" { signers = ["34365D9472D7468F"] }`, "policy.hcl:1:28: signers: \"34365D9472D7468F\" is not KIND:VALUE"},
		{"unknown kind", `provider "a/b" { signers = ["gpg:x"] }`, "unknown kind \"gpg\""},
		{"short key id", `provider "a/b" { signers = ["publisher:72D7468F"] }`, "16 hex digits"},
		{"publisher on a module", "module \"a/b/c\" {\n  signers = [\"publisher:34365D9472D7468F\"]\n}", "policy.hcl:2:13: signers: \"publisher:34365D9472D7468F\": publisher keys sign provider releases only"},
		{"publisher on tofu", `tofu { signers = ["publisher:34365D9472D7468F"] }`, "provider releases only"},
		{"missing key", "provider \"a/b\" {\n signers = [\"attestation:nope.pub\"]\n}", "policy.hcl:2:12: signers: \"attestation:nope.pub\": reading the public key"},
		{"not a key", `module "a/b/c" { signers = ["cosign:junk.pub"] }`, "not a PEM public key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), file)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(%q) = %v, want an error containing %q", c.src, err, c.want)
			}
		})
	}
	if _, err := Parse([]byte(`tofu { signers = ["attestation:org.pub", "cosign:org.pub"] }`), file); err != nil {
		t.Errorf("a key beside the file: %v", err)
	}
}

func TestParseMinAge(t *testing.T) {
	for s, want := range map[string]time.Duration{"72h": 72 * time.Hour, "90m": 90 * time.Minute, "7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, "3s": 3 * time.Second} {
		if d, err := ParseMinAge(s); err != nil || d != want {
			t.Errorf("ParseMinAge(%q) = %v, %v", s, d, err)
		}
	}
}
