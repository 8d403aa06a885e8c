package notation

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	notationgo "github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/registry"
	"github.com/notaryproject/notation-go/signer"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
)

// signingIdentity is a test CA and a code-signing certificate it issued.
type signingIdentity struct {
	root *x509.Certificate
	leaf *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newIdentity(t *testing.T, name string) signingIdentity {
	t.Helper()
	rootKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	rootTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name + " CA", Organization: []string{"oci-tofu tests"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	root := mustCert(t, rootTmpl, rootTmpl, &rootKey.PublicKey, rootKey)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name + " signer", Organization: []string{"oci-tofu tests"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}
	return signingIdentity{root: root, leaf: mustCert(t, leafTmpl, root, &leafKey.PublicKey, rootKey), key: leafKey}
}

func mustCert(t *testing.T, tmpl, parent *x509.Certificate, pub, priv any) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// configDir writes a notation configuration directory: the root in the
// trust store ca:test, and a strict trust policy for scopes.
func configDir(t *testing.T, root *x509.Certificate, scopes ...string) string {
	t.Helper()
	dir := t.TempDir()
	store := filepath.Join(dir, "truststore", "x509", "ca", "test")
	if err := os.MkdirAll(store, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(store, "root.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: root.Raw}), 0o644)
	policy := map[string]any{"version": "1.0", "trustPolicies": []map[string]any{{
		"name": "test", "registryScopes": scopes, "signatureVerification": map[string]any{"level": "strict"},
		"trustStores": []string{"ca:test"}, "trustedIdentities": []string{"*"},
	}}}
	b, _ := json.Marshal(policy)
	os.WriteFile(filepath.Join(dir, "trustpolicy.oci.json"), b, 0o644)
	return dir
}

// pushSubject pushes a small image manifest into the layout under tag.
func pushSubject(t *testing.T, layoutDir, tag string) ocispec.Descriptor {
	t.Helper()
	c, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.Open(oci.Reference{Layout: true, Repository: layoutDir})
	if err != nil {
		t.Fatal(err)
	}
	l := oci.BytesBlob("application/octet-stream", []byte("release "+tag), nil)
	cfg := oci.BytesBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil)
	m, err := oci.EncodeManifest(ocispec.Manifest{Config: cfg.Descriptor, Layers: []ocispec.Descriptor{l.Descriptor}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := oci.Push(context.Background(), repo, &oci.Artifact{Blobs: []oci.Blob{l, cfg}, Manifests: []oci.Manifest{m}}, oci.Tags{tag: ""}, oci.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Root
}

// sign signs the layout's tag with notation-go itself (its signer, its
// OCI layout repository), as `notation sign --oci-layout` does.
func sign(t *testing.T, id signingIdentity, layoutDir, tag string) {
	t.Helper()
	s, err := signer.NewGenericSigner(id.key, []*x509.Certificate{id.leaf, id.root})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := registry.NewOCIRepository(layoutDir, registry.RepositoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = notationgo.Sign(context.Background(), s, repo, notationgo.SignOptions{
		SignerSignOptions: notationgo.SignerSignOptions{SignatureMediaType: "application/jose+json"},
		ArtifactReference: tag,
	})
	if err != nil {
		t.Fatalf("notation sign: %v", err)
	}
}

func check(t *testing.T, trust *Trust, layoutDir string, subject ocispec.Descriptor) error {
	t.Helper()
	c, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.OpenReadOnly(context.Background(), oci.Reference{Layout: true, Repository: layoutDir})
	if err != nil {
		t.Fatal(err)
	}
	refusal, err := trust.Check(context.Background(), repo, oci.LayoutPrefix+layoutDir, subject.Digest)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return refusal
}

func mustLoad(t *testing.T, dir string) *Trust {
	t.Helper()
	trust, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return trust
}

// What notation-go signs verifies under a trust policy whose store holds
// the signer's CA, for the layout's scope or any; another CA, another
// scope, an unsigned root, a tampered signature and a signature of
// another root copied beside this one are refused.
func TestNotationSignaturesVerify(t *testing.T) {
	ctx := context.Background()
	layoutDir := filepath.Join(t.TempDir(), "Releases")
	os.MkdirAll(layoutDir, 0o755)
	id := newIdentity(t, "publisher")
	signed, unsigned := pushSubject(t, layoutDir, "1.0.0"), pushSubject(t, layoutDir, "1.1.0")
	sign(t, id, layoutDir, "1.0.0")

	for _, scope := range []string{"*", "local/releases"} {
		if refusal := check(t, mustLoad(t, configDir(t, id.root, scope)), layoutDir, signed); refusal != nil {
			t.Errorf("scope %s: refused: %v", scope, refusal)
		}
	}
	trust := mustLoad(t, configDir(t, id.root, "*"))
	refusals := map[string]struct {
		trust   *Trust
		subject ocispec.Descriptor
		want    string
	}{
		"unsigned":      {trust, unsigned, "no notation signature"},
		"another CA":    {mustLoad(t, configDir(t, newIdentity(t, "stranger").root, "*")), signed, "signature"},
		"another scope": {mustLoad(t, configDir(t, id.root, "registry.example/other")), signed, "no applicable trust policy"},
	}
	for what, c := range refusals {
		if refusal := check(t, c.trust, layoutDir, c.subject); refusal == nil || !strings.Contains(refusal.Error(), c.want) {
			t.Errorf("%s: refusal %v, want one saying %q", what, refusal, c.want)
		}
	}

	// The signature of 1.0.0, copied as a referrer of 1.1.0, and tampered.
	repo, err := registry.NewOCIRepository(layoutDir, registry.RepositoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sigs []ocispec.Descriptor
	if err := repo.ListSignatures(ctx, signed, func(d []ocispec.Descriptor) error { sigs = append(sigs, d...); return nil }); err != nil || len(sigs) != 1 {
		t.Fatalf("signatures of 1.0.0: %v, %v", sigs, err)
	}
	blob, _, err := repo.FetchSignatureBlob(ctx, sigs[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := repo.PushSignature(ctx, "application/jose+json", reencode(t, blob), unsigned, nil); err != nil {
		t.Fatal(err)
	}
	if refusal := check(t, trust, layoutDir, unsigned); refusal == nil || !strings.Contains(refusal.Error(), "is of "+signed.Digest.String()) {
		t.Errorf("another root's signature: refusal %v", refusal)
	}
	tampered := tamperJWS(t, blob)
	third := pushSubject(t, layoutDir, "1.2.0")
	if _, _, err := repo.PushSignature(ctx, "application/jose+json", tampered, third, nil); err != nil {
		t.Fatal(err)
	}
	if refusal := check(t, trust, layoutDir, third); refusal == nil {
		t.Error("a tampered signature verified")
	}
}

// reencode is the same JSON envelope in other bytes (a blob of its own).
func reencode(t *testing.T, blob []byte) []byte {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(blob, &env); err != nil {
		t.Fatal(err)
	}
	out, _ := json.MarshalIndent(env, "", " ")
	return out
}

// tamperJWS changes one character of a JWS envelope's signature.
func tamperJWS(t *testing.T, blob []byte) []byte {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(blob, &env); err != nil {
		t.Fatal(err)
	}
	sig := []byte(env["signature"].(string))
	if sig[4] == 'A' {
		sig[4] = 'B'
	} else {
		sig[4] = 'A'
	}
	env["signature"] = string(sig)
	out, _ := json.Marshal(env)
	return out
}

func TestLoadRefusesBadConfigurations(t *testing.T) {
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no notation trust policy") {
		t.Errorf("an empty directory: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "trustpolicy.json"), []byte(`{"version":"1.0","trustPolicies":[]}`), 0o644)
	if _, err := Load(dir); err == nil {
		t.Error("a policy with no statements was accepted")
	}
}
