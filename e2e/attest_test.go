package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// writeKeyPair writes a PKCS#8 private key and its PKIX public key as PEM
// files (what `openssl genpkey` writes) and returns their paths.
func writeKeyPair(t *testing.T, priv any, pub any) (string, string) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key, pubFile := filepath.Join(dir, "attest.key"), filepath.Join(dir, "attest.pub")
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
	os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644)
	return key, pubFile
}

func ecdsaKeyPair(t *testing.T) (string, string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return writeKeyPair(t, k, &k.PublicKey)
}

// cosign runs the real cosign CLI offline (no Rekor: the signatures are
// made with a key and never uploaded), trusting the test CA.
func cosign(t *testing.T, args ...string) (string, error) {
	t.Helper()
	env := append(testenvEnv(t), "SSL_CERT_FILE="+testenv.NewCA(t).CertFile, "COSIGN_PASSWORD=test-password", "TUF_ROOT="+t.TempDir())
	return testenv.Run(t, t.TempDir(), env, testenv.Tool(t, "cosign"), args...)
}

func cosignVerify(t *testing.T, pub, ref string) (string, error) {
	return cosign(t, "verify", "--key", pub, "--insecure-ignore-tlog=true", ref)
}

func cosignVerifyAttestation(t *testing.T, pub, ref string) (string, error) {
	return cosignVerifyAttestationType(t, pub, ref, release.ProviderPredicateType)
}

func cosignVerifyAttestationType(t *testing.T, pub, ref, predicateType string) (string, error) {
	return cosign(t, "verify-attestation", "--key", pub, "--insecure-ignore-tlog=true", "--type", predicateType, ref)
}

// cosignVerifyTagSchema and cosignVerifyAttestationTagSchema check as
// cosign v2 (and Kyverno) read signatures: from the tag schema's
// sha256-<hex>.sig/.att alone, Sigstore bundles ignored
// (--new-bundle-format=false). Without the flag, cosign v3 reads the
// bundles among the referrers when there are any.
func cosignVerifyTagSchema(t *testing.T, pub, ref string) (string, error) {
	return cosign(t, "verify", "--new-bundle-format=false", "--key", pub, "--insecure-ignore-tlog=true", ref)
}

func cosignVerifyAttestationTagSchema(t *testing.T, pub, ref, predicateType string) (string, error) {
	return cosign(t, "verify-attestation", "--new-bundle-format=false", "--key", pub, "--insecure-ignore-tlog=true", "--type", predicateType, ref)
}

// refused requires cosign to have failed, saying why (want).
func refused(t *testing.T, what string, out string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("%s: cosign %v, want a refusal saying %q:\n%s", what, err, want, out)
	}
}

// pushAttested pushes a hello fixture version with --attest-key and
// returns the index digest.
func pushAttested(t *testing.T, key, repo, version string) string {
	t.Helper()
	out := mustRun(t, "push", "provider", "--json", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"),
		"--attest-key", key, testenv.Testdata(t, "providers", "hello", version), repo)
	return jsonField(t, out, "digest")
}

// The real cosign accepts the signature and the attestation push provider
// writes, in both forms — the Sigstore bundle referrers cosign v3 reads
// by default, and the sha256-….sig/.att tags cosign v2 and Kyverno read
// (--new-bundle-format=false) — and refuses them with another key; tofu
// still installs the provider, and verify still passes. A re-push writes
// neither form twice.
func TestAttestVerifiedByCosign(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key, pub := ecdsaKeyPair(t)
	repo := reg.Host + "/providers/test/hello"
	d := pushAttested(t, key, repo, "1.0.0")
	ref := repo + "@" + d
	_, otherPub := ecdsaKeyPair(t)
	for _, form := range []struct {
		name                       string
		verify                     func(t *testing.T, pub, ref string) (string, error)
		verifyAttestation          func(t *testing.T, pub, ref, predicateType string) (string, error)
		otherKeySays, otherAttSays string
	}{
		{"bundles", cosignVerify, cosignVerifyAttestationType, "accepted signatures do not match threshold", "accepted signatures do not match threshold"},
		{"tag schema", cosignVerifyTagSchema, cosignVerifyAttestationTagSchema, "invalid signature", "accepted signatures do not match threshold"},
	} {
		if out, err := form.verify(t, pub, ref); err != nil {
			t.Fatalf("%s: cosign verify: %v\n%s", form.name, err, out)
		}
		out, err := form.verifyAttestation(t, pub, ref, release.ProviderPredicateType)
		if err != nil {
			t.Fatalf("%s: cosign verify-attestation: %v\n%s", form.name, err, out)
		}
		checkPredicate(t, out, d)
		out, err = form.verify(t, otherPub, ref)
		refused(t, form.name+": another key's signature", out, err, form.otherKeySays)
		out, err = form.verifyAttestation(t, otherPub, ref, release.ProviderPredicateType)
		refused(t, form.name+": another key's attestation", out, err, form.otherAttSays)
	}

	// Pushing again (up to date) re-attests without piling up layers or
	// referrers.
	if d2 := pushAttested(t, key, repo, "1.0.0"); d2 != d {
		t.Fatalf("re-push gave %s, not %s", d2, d)
	}
	r := registryRepo(t, reg, "providers/test/hello")
	for _, kind := range []attach.AttachmentKind{attach.CosignSignatures, attach.CosignAttestations} {
		layers, err := attach.ReadAttachment(context.Background(), r, digest.Digest(d), kind)
		if err != nil || len(layers) != 1 {
			t.Errorf("%s after a re-push: %d layers, %v", kind, len(layers), err)
		}
	}
	if held, err := attach.ReadReferrers(context.Background(), r, digest.Digest(d), attach.ArtifactTypeSigstoreBundle); err != nil || len(held.Items) != 2 {
		t.Errorf("after a re-push: %d bundle referrers, %v; want 2 (a signature, an attestation)", len(held.Items), err)
	}

	mustRun(t, "verify", repo)
	tofu := testenv.Tofu(t, ociMirrorConfig(reg.Host))
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "~> 1.0")})
	tofu.Run(t, dir, "init", "-input=false", "-no-color")

	// oci-tofu verify --attest-pub agrees with cosign.
	out := mustRun(t, "verify", "--attest-pub", pub, repo)
	wantLine(t, out, "ok", d+" is signed and attested ("+release.ProviderPredicateType+") by key "+pub)
	out = mustRun(t, "verify", "--json", "--skip-zips", "--attest-pub", pub, ref)
	if !strings.Contains(out, `"ok": true`) || !strings.Contains(out, "is signed and attested") {
		t.Errorf("verify --json --attest-pub:\n%s", out)
	}
	out = verifyRefused(t, "another key", otherPub, ref)
	wantLine(t, out, "error", "key "+otherPub+": bundles: no signature by the key; signature: no signature by the key")
	wantLine(t, out, "error", "key "+otherPub+": bundles: no signature by the key; attestation: no signature by the key")
	out = verifyRefused(t, "the right key and another", pub+","+otherPub, ref)
	wantLine(t, out, "ok", "by key "+pub)
	// A version pushed without --attest-key fails verify --attest-pub.
	mustRun(t, "push", "provider", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "providers", "hello", "1.1.0"), repo)
	out = verifyRefused(t, "an unsigned version", pub, repo)
	wantLine(t, out, "error", "key "+pub+": no signature (sha256-")
	wantLine(t, out, "ok", d+" is signed and attested")
}

// verifyRefused requires oci-tofu verify --skip-zips --attest-pub (pubs
// separated by commas) to exit 1 on ref, and returns its output.
func verifyRefused(t *testing.T, what, pubs, ref string) string {
	t.Helper()
	args := []string{"verify", "--skip-zips"}
	for _, p := range strings.Split(pubs, ",") {
		args = append(args, "--attest-pub", p)
	}
	out, err := run(t, append(args, ref)...)
	if err == nil || !strings.Contains(out, "signature or attestation is missing or does not verify") {
		t.Errorf("verify --attest-pub, %s: %v, want a refusal:\n%s", what, err, out)
	}
	return out
}

// wantLine requires a line of verify's human output with severity sev
// containing want.
func wantLine(t *testing.T, out, sev, want string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, sev+" ") && strings.Contains(l, want) {
			return
		}
	}
	t.Errorf("no %s line saying %q in:\n%s", sev, want, out)
}

// checkPredicate reads cosign verify-attestation's output (one JSON
// envelope a line) and checks the statement's subject and predicate.
func checkPredicate(t *testing.T, out, d string) {
	t.Helper()
	st := attestedStatement(t, out)
	var p release.ProviderPredicate
	if err := json.Unmarshal(st.Predicate, &p); err != nil {
		t.Fatal(err)
	}
	switch {
	case "sha256:"+st.Subject[0].Digest["sha256"] != d:
		t.Errorf("subject %v, want %s", st.Subject, d)
	case p.Type != "hello" || p.Version != "1.0.0" || p.Signature != "verified" || len(p.KeyFingerprints) != 1 || len(p.KeyFingerprints[0]) != 40:
		t.Errorf("predicate %+v", p)
	case len(p.Platforms) != 4 || !strings.HasPrefix(p.Platforms["linux_amd64"].H1, "h1:") || p.Platforms["linux_amd64"].ZH != "zh:"+fixtureZipSHA(t, "1.0.0", "linux_amd64"):
		t.Errorf("platforms %+v", p.Platforms)
	case p.SHA256SUMS == nil || p.SHA256SUMSSig == nil || p.VerifiedAt == "":
		t.Errorf("predicate %+v", p)
	}
}

// pushTagSchemaAttested pushes a hello fixture version and attests it in
// cosign's tag schema alone (.sig/.att), as push --attest-key did before
// it wrote referrers too; it returns the index digest.
func pushTagSchemaAttested(t *testing.T, reg *testenv.Registry, key, name, version string) digest.Digest {
	t.Helper()
	out := mustRun(t, "push", "provider", "--json", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "providers", "hello", version), reg.Host+"/"+name)
	d := digest.Digest(jsonField(t, out, "digest"))
	s, err := attest.LoadSigner(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := attest.Sign(s, reg.Host+"/"+name, d, release.ProviderPredicateType, map[string]string{"version": version})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Tag(context.Background(), registryRepo(t, reg, name)); err != nil {
		t.Fatal(err)
	}
	return d
}

// An attestation or signature about another index, copied under this
// index's tags, and a tampered attestation are refused by cosign (the
// tag schema alone: a valid bundle beside them would verify); so is a
// bundle about another index referring to this one.
func TestAttestHostileAttachmentsRefusedByCosign(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	key, pub := ecdsaKeyPair(t)
	repo := reg.Host + "/providers/test/hello"
	a := pushTagSchemaAttested(t, reg, key, "providers/test/hello", "1.0.0")
	b := pushTagSchemaAttested(t, reg, key, "providers/test/hello", "1.1.0")
	r := registryRepo(t, reg, "providers/test/hello")
	for _, kind := range []attach.AttachmentKind{attach.CosignSignatures, attach.CosignAttestations} {
		layers, err := attach.ReadAttachment(ctx, r, b, kind)
		if err != nil || len(layers) != 1 {
			t.Fatalf("%s of %s: %v", kind, b, err)
		}
		if _, err := attach.WriteAttachment(ctx, r, a, kind, layers); err != nil {
			t.Fatal(err)
		}
	}
	ref := repo + "@" + a.String()
	out, err := cosignVerify(t, pub, ref)
	refused(t, "a signature of another index", out, err, "invalid or missing digest in claim")
	out, err = cosignVerifyAttestation(t, pub, ref)
	refused(t, "an attestation about another index", out, err, "no matching subject digest found")
	out = verifyRefused(t, "attachments of another index", pub, ref)
	wantLine(t, out, "error", "signature: the key's signature names "+b.String())
	wantLine(t, out, "error", "attestation: the key's attestation is about another subject")

	refB := repo + "@" + b.String()
	layers, _ := attach.ReadAttachment(ctx, r, b, attach.CosignAttestations)
	layers[0].Payload = tamperEnvelope(t, layers[0].Payload)
	if _, err := attach.WriteAttachment(ctx, r, b, attach.CosignAttestations, layers); err != nil {
		t.Fatal(err)
	}
	out, err = cosignVerifyAttestation(t, pub, refB)
	refused(t, "a tampered attestation", out, err, "accepted signatures do not match threshold")
	if out, err := cosignVerify(t, pub, refB); err != nil {
		t.Errorf("the untouched signature no longer verifies: %v\n%s", err, out)
	}
	out = verifyRefused(t, "a tampered attestation", pub, refB)
	wantLine(t, out, "error", "key "+pub+": attestation: no signature by the key")
	if strings.Contains(out, "key "+pub+": signature:") {
		t.Errorf("verify refused the untouched signature:\n%s", out)
	}

	// push --attest-key's bundles of one index, copied as referrers of
	// another (pushed without --attest-key).
	signed := reg.Host + "/providers/signed/hello"
	src := digest.Digest(pushAttested(t, key, signed, "1.0.0"))
	victim := digest.Digest(jsonField(t, mustRun(t, "push", "provider", "--json", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "providers", "hello", "1.1.0"), signed), "digest"))
	held, err := attach.ReadReferrers(ctx, registryRepo(t, reg, "providers/signed/hello"), src, attach.ArtifactTypeSigstoreBundle)
	if err != nil || len(held.Items) != 2 {
		t.Fatalf("the bundles of %s: %d, %v", src, len(held.Items), err)
	}
	for _, h := range held.Items {
		if _, err := attach.WriteReferrer(ctx, registryRepo(t, reg, "providers/signed/hello"), ocispec.Descriptor{Digest: victim}, attach.ArtifactTypeSigstoreBundle, h.Layers, h.Annotations); err != nil {
			t.Fatal(err)
		}
	}
	refV := signed + "@" + victim.String()
	out, err = cosignVerify(t, pub, refV)
	refused(t, "a signature bundle of another index", out, err, "artifact digest")
	out, err = cosignVerifyAttestation(t, pub, refV)
	refused(t, "an attestation bundle of another index", out, err, "artifact digest")
	out = verifyRefused(t, "bundles of another index", pub, refV)
	wantLine(t, out, "error", "; no attestation (sha256-")
	if !strings.Contains(out, "is about another subject, not "+victim.String()) {
		t.Errorf("verify does not say the bundles are about another index:\n%s", out)
	}
}

// tamperEnvelope changes the version in a DSSE envelope's statement,
// keeping its signature.
func tamperEnvelope(t *testing.T, data []byte) []byte {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatal(err)
	}
	body, _ := base64.StdEncoding.DecodeString(e["payload"].(string))
	changed := strings.Replace(string(body), `"version":"1.1.0"`, `"version":"9.9.9"`, 1)
	if changed == string(body) {
		t.Fatalf("no version in %s", body)
	}
	e["payload"] = base64.StdEncoding.EncodeToString([]byte(changed))
	out, _ := json.Marshal(e)
	return out
}

// Ed25519 keys and cosign's own encrypted key file sign what cosign accepts.
func TestAttestOtherKeyKinds(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pubK, privK, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edKey, edPub := writeKeyPair(t, privK, pubK)
	t.Setenv("COSIGN_PASSWORD", "test-password") // for oci-tofu reading cosign.key
	dir := t.TempDir()
	if out, err := cosign(t, "generate-key-pair", "--output-key-prefix", filepath.Join(dir, "cosign")); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	for name, pair := range map[string][2]string{
		"ed25519":          {edKey, edPub},
		"cosign-encrypted": {filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")},
	} {
		t.Run(name, func(t *testing.T) {
			repo := reg.Host + "/" + name + "/hello"
			out, err := run(t, "push", "provider", "--json", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"),
				"--attest-key", pair[0], testenv.Testdata(t, "providers", "hello", "1.0.0"), repo)
			if err != nil {
				t.Fatalf("push: %v\n%s", err, out)
			}
			ref := repo + "@" + jsonField(t, out, "digest")
			if out, err := cosignVerify(t, pair[1], ref); err != nil {
				t.Errorf("cosign verify: %v\n%s", err, out)
			}
			if out, err := cosignVerifyAttestation(t, pair[1], ref); err != nil {
				t.Errorf("cosign verify-attestation: %v\n%s", err, out)
			}
		})
	}
}
