package notation

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/notaryproject/notation-go/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

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
	refusal, err := trust.Check(context.Background(), repo, oci.LayoutPrefix+layoutDir, subject.Digest, "")
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
	id := testenv.NewNotationSigner(t, "publisher")
	signed, unsigned := pushSubject(t, layoutDir, "1.0.0"), pushSubject(t, layoutDir, "1.1.0")
	id.SignLayout(t, layoutDir, "1.0.0")

	for _, scope := range []string{"*", "local/releases"} {
		if refusal := check(t, mustLoad(t, id.ConfigDir(t, scope)), layoutDir, signed); refusal != nil {
			t.Errorf("scope %s: refused: %v", scope, refusal)
		}
	}
	trust := mustLoad(t, id.ConfigDir(t, "*"))
	refusals := map[string]struct {
		trust   *Trust
		subject ocispec.Descriptor
		want    string
	}{
		"unsigned":      {trust, unsigned, "no notation signature"},
		"another CA":    {mustLoad(t, testenv.NewNotationSigner(t, "stranger").ConfigDir(t, "*")), signed, "signature"},
		"another scope": {mustLoad(t, id.ConfigDir(t, "registry.example/other")), signed, "no applicable trust policy"},
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
