package attest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// pushRoot pushes a small manifest to refer to, tagged 1.0.0.
func pushRoot(t *testing.T, repo oci.Repository) digest.Digest {
	t.Helper()
	l := oci.BytesBlob("application/octet-stream", []byte("a release"), nil)
	cfg := oci.BytesBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil)
	m, err := oci.EncodeManifest(ocispec.Manifest{Config: cfg.Descriptor, Layers: []ocispec.Descriptor{l.Descriptor}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := oci.Push(context.Background(), repo, &oci.Artifact{Blobs: []oci.Blob{l, cfg}, Manifests: []oci.Manifest{m}}, oci.Tags{"1.0.0": ""}, oci.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Root.Digest
}

// cosignBundle is what cosign v3 writes: a Sigstore bundle holding a DSSE
// envelope of an in-toto statement about about, signed by s.
func cosignBundle(t *testing.T, s *Signer, about digest.Digest, predicateType string) []byte {
	t.Helper()
	bundles++ // each bundle its own (signatures may be deterministic)
	env, err := sealStatement(s, Statement{
		Type:          statementTypeV01,
		Subject:       []Subject{{Name: fmt.Sprint("r", bundles), Digest: map[string]string{"sha256": about.Encoded()}}},
		PredicateType: predicateType, Predicate: json.RawMessage(`{}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{
		"mediaType":            attach.ArtifactTypeSigstoreBundle,
		"verificationMaterial": map[string]any{"publicKey": map[string]string{"hint": "x"}},
		"dsseEnvelope":         json.RawMessage(env),
	})
	return b
}

var bundles int

// referBundle writes a bundle referrer of root, as cosign lays it out;
// layerSize, when set, is the size its layer descriptor claims.
func referBundle(t *testing.T, repo oci.Repository, root digest.Digest, bundle []byte, layerSize int64) {
	t.Helper()
	desc, err := repo.Resolve(context.Background(), root.String())
	if err != nil {
		t.Fatal(err)
	}
	l := oci.BytesBlob(attach.ArtifactTypeSigstoreBundle, bundle, nil)
	cfg := oci.BytesBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil)
	layer := l.Descriptor
	if layerSize > 0 {
		layer.Size = layerSize
	}
	m, err := oci.EncodeManifest(ocispec.Manifest{ArtifactType: attach.ArtifactTypeSigstoreBundle, Config: cfg.Descriptor, Layers: []ocispec.Descriptor{layer}, Subject: &desc})
	if err != nil {
		t.Fatal(err)
	}
	a := &oci.Artifact{Blobs: []oci.Blob{cfg}, Manifests: []oci.Manifest{m}}
	if layerSize == 0 {
		a.Blobs = append(a.Blobs, l)
	}
	if _, err := oci.Push(context.Background(), repo, a, oci.Tags{}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

// cosign v3's bundles (signature and attestation) verify as its
// tag-schema attachments do; hostile ones are refused with a reason.
func TestBundlesVerify(t *testing.T) {
	ctx := context.Background()
	s, other := ecdsaSigner(t), ecdsaSigner(t)
	repo := layout(t)
	root := pushRoot(t, repo)
	referBundle(t, repo, root, cosignBundle(t, s, root, CosignSignPredicateType), 0)
	referBundle(t, repo, root, cosignBundle(t, s, root, testPredicateType), 0)
	r, err := Verify(ctx, repo, root, s.Public(), testPredicateType)
	if err != nil || !r.OK() || r.Statement == nil {
		t.Fatalf("bundles by the key: %+v, %v", r, err)
	}
	if st, refusal, err := VerifyAttestation(ctx, repo, root, []*Verifier{other.Public(), s.Public()}, testPredicateType); err != nil || refusal != nil || st == nil {
		t.Errorf("VerifyAttestation: %v, %v, %v", st, refusal, err)
	}
	r, _ = Verify(ctx, repo, root, other.Public(), testPredicateType)
	if r.Signature == nil || !strings.Contains(r.Signature.Error(), "no signature by the key") || r.Attestation == nil {
		t.Errorf("another key: %+v", r)
	}

	elsewhere := digest.FromString("another release")
	tampered := func() []byte {
		b := cosignBundle(t, s, root, testPredicateType)
		var m map[string]json.RawMessage
		json.Unmarshal(b, &m)
		var e envelope
		json.Unmarshal(m["dsseEnvelope"], &e)
		body, _ := json.Marshal(Statement{Type: StatementType, Subject: []Subject{{Digest: map[string]string{"sha256": root.Encoded()}}}, PredicateType: testPredicateType, Predicate: json.RawMessage(`{"forged":true}`)})
		e.Payload = b64(body)
		m["dsseEnvelope"], _ = json.Marshal(e)
		out, _ := json.Marshal(m)
		return out
	}
	for name, c := range map[string]struct {
		bundle []byte
		size   int64
		want   string
	}{
		"about another release": {cosignBundle(t, s, elsewhere, testPredicateType), 0, "about another subject"},
		"tampered":              {tampered(), 0, "no signature by the key"},
		"a 100 MiB layer":       {cosignBundle(t, s, root, testPredicateType), 100 << 20, "larger than"},
		"not a bundle":          {[]byte(`{"mediaType":"text/plain"}`), 0, "media type"},
	} {
		t.Run(name, func(t *testing.T) {
			repo := layout(t)
			root := pushRoot(t, repo)
			referBundle(t, repo, root, c.bundle, c.size)
			_, refusal, err := VerifyAttestation(ctx, repo, root, []*Verifier{s.Public()}, testPredicateType)
			if err != nil || refusal == nil || !strings.Contains(refusal.Error(), c.want) {
				t.Errorf("refusal %v (err %v), want one saying %q", refusal, err, c.want)
			}
		})
	}
}

// More bundles than are read (attach.MaxReferrers), none by the key: the
// refusal says how many were read.
func TestManyBundlesAreReadBounded(t *testing.T) {
	s, other := ecdsaSigner(t), ecdsaSigner(t)
	repo := layout(t)
	root := pushRoot(t, repo)
	for range attach.MaxReferrers + 6 {
		referBundle(t, repo, root, cosignBundle(t, other, root, testPredicateType), 0)
	}
	_, refusal, err := VerifyAttestation(context.Background(), repo, root, []*Verifier{s.Public()}, testPredicateType)
	if err != nil || refusal == nil || !strings.Contains(refusal.Error(), "more than 64 bundles refer to") {
		t.Errorf("refusal %v (err %v)", refusal, err)
	}
}
