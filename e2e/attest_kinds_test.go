package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// attested runs cosign verify and cosign verify-attestation --type
// predicateType on ref with pub, requires both to pass, and decodes the
// attested statement's predicate into pred; it returns the subject digest.
// Both forms oci-tofu writes must be there: two Sigstore bundle referrers
// (a signature, an attestation), which cosign v3 reads by default, and
// the tag schema, which it reads with --new-bundle-format=false.
func attested(t *testing.T, pub, ref, predicateType string, pred any) string {
	t.Helper()
	if n := bundleReferrers(t, ref); n != 2 {
		t.Errorf("%s has %d Sigstore bundle referrers, want 2 (a signature and an attestation)", ref, n)
	}
	if out, err := cosignVerifyAttestationTagSchema(t, pub, ref, predicateType); err != nil {
		t.Errorf("cosign verify-attestation --new-bundle-format=false --type %s: %v\n%s", predicateType, err, out)
	}
	if out, err := cosignVerify(t, pub, ref); err != nil {
		t.Fatalf("cosign verify: %v\n%s", err, out)
	}
	out, err := cosignVerifyAttestationType(t, pub, ref, predicateType)
	if err != nil {
		t.Fatalf("cosign verify-attestation --type %s: %v\n%s", predicateType, err, out)
	}
	st := attestedStatement(t, out)
	if st.PredicateType != predicateType {
		t.Errorf("predicate type %s, want %s", st.PredicateType, predicateType)
	}
	if err := json.Unmarshal(st.Predicate, pred); err != nil {
		t.Fatal(err)
	}
	return "sha256:" + st.Subject[0].Digest["sha256"]
}

// statement is the in-toto Statement cosign verify-attestation prints.
type statement struct {
	Subject []struct {
		Digest map[string]string
	}
	PredicateType string
	Predicate     json.RawMessage
}

// attestedStatement reads cosign verify-attestation's output (one JSON
// envelope a line) and decodes the last envelope's statement, which must
// have one subject.
func attestedStatement(t *testing.T, out string) statement {
	t.Helper()
	line := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	var env struct{ Payload string }
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &env); err != nil {
		t.Fatalf("cosign output: %v\n%s", err, out)
	}
	body, _ := base64.StdEncoding.DecodeString(env.Payload)
	var st statement
	if err := json.Unmarshal(body, &st); err != nil || len(st.Subject) != 1 {
		t.Fatalf("statement %s: %v", body, err)
	}
	return st
}

// attestRefusals requires cosign to refuse another key and another
// predicate type, and oci-tofu verify --attest-pub to refuse another key
// and pass with pub.
func attestRefusals(t *testing.T, pub, ref, predicateType string) {
	t.Helper()
	_, otherPub := ecdsaKeyPair(t)
	out, err := cosignVerify(t, otherPub, ref)
	refused(t, "another key's signature (bundles)", out, err, "accepted signatures do not match threshold")
	out, err = cosignVerifyTagSchema(t, otherPub, ref)
	refused(t, "another key's signature (tag schema)", out, err, "invalid signature")
	out, err = cosignVerifyAttestationType(t, otherPub, ref, predicateType)
	refused(t, "another key's attestation", out, err, "accepted signatures do not match threshold")
	out, err = cosignVerifyAttestationType(t, pub, ref, "https://oci-tofu.dev/attestations/other/v1")
	refused(t, "another predicate type", out, err, "none of the attestations matched the predicate type")
	out = mustRun(t, "verify", "--attest-pub", pub, ref)
	wantLine(t, out, "ok", "is signed and attested ("+predicateType+") by key "+pub)
	out = verifyRefused(t, "another key", otherPub, ref)
	wantLine(t, out, "error", "key "+otherPub+": bundles: no signature by the key; attestation: no signature by the key")
}

// bundleReferrers counts the Sigstore bundles among the referrers of
// ref (HOST/REPO@DIGEST), read as oci-tofu reads them.
func bundleReferrers(t *testing.T, ref string) int {
	t.Helper()
	r, err := oci.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	c, err := oci.NewClient(oci.Options{CAFile: testenv.NewCA(t).CertFile})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.OpenReadOnly(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	held, err := attach.ReadReferrers(context.Background(), repo, digest.Digest(r.Reference), attach.ArtifactTypeSigstoreBundle)
	if err != nil {
		t.Fatal(err)
	}
	return len(held.Items)
}

// push module --attest-key signs the module's manifest and attests the
// package (predicate module-package/v1); cosign accepts both.
func TestAttestModuleVerifiedByCosign(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key, pub := ecdsaKeyPair(t)
	repo := reg.Host + "/modules/acme/greeting"
	src := testenv.Testdata(t, "modules", "greeting")
	out := mustRun(t, "push", "module", "--json", "--no-cache", "--attest-key", key, src, repo+":1.0.0", "--also-tag", "latest")
	d, zipDigest := jsonField(t, out, "digest"), jsonField(t, out, "zip_digest")
	ref := repo + "@" + d
	var p modulepkg.Predicate
	if got := attested(t, pub, ref, modulepkg.PredicateType, &p); got != d {
		t.Errorf("subject %s, want %s", got, d)
	}
	switch {
	case p.Source.Kind != "directory" || p.Source.Path != src || !strings.HasPrefix(p.Source.TreeDigest, "sha256:") || p.Source.ZipSHA256 != "":
		t.Errorf("source %+v", p.Source)
	case p.Package.Digest != zipDigest || p.Package.Size == 0 || p.Package.Files == 0:
		t.Errorf("package %+v, want digest %s", p.Package, zipDigest)
	case p.Manifest != d || p.Repository != repo || strings.Join(p.Tags, ",") != "1.0.0,latest":
		t.Errorf("predicate %+v", p)
	case p.AttestedAt == "" || p.Verifier.Name != "oci-tofu":
		t.Errorf("predicate %+v", p)
	}
	attestRefusals(t, pub, ref, modulepkg.PredicateType)
	mustRun(t, "verify", "--attest-pub", pub, repo)
}

// push tofu --attest-key signs the release manifest and attests what was
// verified (predicate tofu-release/v1); cosign accepts both.
func TestAttestTofuReleaseVerifiedByCosign(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key, pub := ecdsaKeyPair(t)
	repo := reg.Host + "/tools/opentofu"
	out := mustRun(t, "push", "tofu", "--json", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), "--attest-key", key, testenv.Testdata(t, "tofu", "1.9.0"), repo)
	d := jsonField(t, out, "digest")
	ref := repo + "@" + d
	var p release.TofuPredicate
	if got := attested(t, pub, ref, release.TofuPredicateType, &p); got != d {
		t.Errorf("subject %s, want %s", got, d)
	}
	files := map[string]string{}
	for _, f := range p.Files {
		files[f.Name] = f.SHA256
	}
	sums := "tofu_1.9.0_SHA256SUMS"
	switch {
	case p.Version != "1.9.0" || p.Repository != repo || len(p.KeyIDs) != 1 || len(p.KeyFingerprints) != 1 || len(p.KeyFingerprints[0]) != 40 || !strings.HasSuffix(p.KeyFingerprints[0], p.KeyIDs[0]):
		t.Errorf("predicate %+v", p)
	case p.SHA256SUMS == nil || p.SHA256SUMS.Name != sums || p.SHA256SUMS.SHA256 != fileSHA256(t, testenv.Testdata(t, "tofu", "1.9.0", sums)):
		t.Errorf("sha256sums %+v", p.SHA256SUMS)
	case p.SHA256SUMSSig == nil || p.SHA256SUMSSig.SHA256 != files[sums+".gpgsig"]:
		t.Errorf("signature %+v", p.SHA256SUMSSig)
	case files["tofu_1.9.0_linux_amd64.tar.gz"] != fileSHA256(t, testenv.Testdata(t, "tofu", "1.9.0", "tofu_1.9.0_linux_amd64.tar.gz")):
		t.Errorf("files %+v", p.Files)
	case p.VerifiedAt == "" || p.Verifier.Name != "oci-tofu":
		t.Errorf("predicate %+v", p)
	}
	attestRefusals(t, pub, ref, release.TofuPredicateType)
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// push mirror --attest-key attests each provider version it imports
// (predicate provider-release/v1, signature "unsigned": a providers mirror
// directory has no SHA256SUMS), also when it is up to date.
func TestAttestPushMirrorVerifiedByCosign(t *testing.T) {
	origin := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	key, pub := ecdsaKeyPair(t)
	mirrorDir := tofuProvidersMirror(t, origin, "1.0.0", "linux_amd64")
	tpl := reg.Host + "/providers/${namespace}/${type}"
	mustRun(t, "push", "mirror", "--provider-template", tpl, mirrorDir)
	repo := reg.Host + "/providers/test/hello"
	// Pushed before without a key: verify --attest-pub refuses it until
	// the up-to-date re-import attests it.
	verifyRefused(t, "not attested yet", pub, repo)
	out := mustRun(t, "push", "mirror", "--provider-template", tpl, "--attest-key", key, mirrorDir)
	if !strings.Contains(out, "up to date") || !strings.Contains(out, "attested it") {
		t.Errorf("re-import with --attest-key: %s", out)
	}
	d := resolveDigest(t, reg, "providers/test/hello", "1.0.0")
	ref := repo + "@" + d
	var p release.ProviderPredicate
	if got := attested(t, pub, ref, release.ProviderPredicateType, &p); got != d {
		t.Errorf("subject %s, want %s", got, d)
	}
	if p.Type != "hello" || p.Version != "1.0.0" || p.Signature != "unsigned" || p.SHA256SUMS != nil || len(p.Platforms) != 1 || !strings.HasPrefix(p.Platforms["linux_amd64"].H1, "h1:") {
		t.Errorf("predicate %+v", p)
	}
	attestRefusals(t, pub, ref, release.ProviderPredicateType)
}

func resolveDigest(t *testing.T, reg *testenv.Registry, name, tag string) string {
	t.Helper()
	desc, err := registryRepo(t, reg, name).Resolve(context.Background(), tag)
	if err != nil {
		t.Fatal(err)
	}
	return desc.Digest.String()
}
