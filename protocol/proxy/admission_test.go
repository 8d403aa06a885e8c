package proxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
)

// pushAttested pushes version to repo and, with s, attests its index as
// `push provider --attest-key` does; it returns the index's digest.
func pushAttested(t *testing.T, repo oci.Repository, version string, s *attest.Signer) digest.Digest {
	t.Helper()
	a := releaseArtifact(t, version)
	push(t, repo, a, version)
	d := a.Root().Digest
	if s != nil {
		if _, err := attest.Attach(context.Background(), repo, "example.com/test/hello", d, s, pubrelease.ProviderPredicateType, map[string]string{"version": version}); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// pushTagAttested pushes version to repo and attests its index in
// cosign's tag schema only (.sig/.att), as `push --attest-key` did before
// it wrote referrers too; it returns the index's digest.
func pushTagAttested(t *testing.T, repo oci.Repository, version string, s *attest.Signer) digest.Digest {
	t.Helper()
	d := pushAttested(t, repo, version, nil)
	a, err := attest.Sign(s, "example.com/test/hello", d, pubrelease.ProviderPredicateType, map[string]string{"version": version})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Tag(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	return d
}

// writeAttachment writes subject's .att manifest as given (layers may
// name blobs that do not exist).
func writeAttachment(t *testing.T, repo oci.Repository, subject digest.Digest, a *oci.Artifact) {
	t.Helper()
	ctx := context.Background()
	tag := attach.AttachmentTag(subject, attach.CosignAttestations)
	tags, err := oci.CurrentTags(ctx, repo, []string{tag})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Push(ctx, repo, a, tags, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

// hostileManifest is an attachment manifest of n layers of size bytes
// each, whose blobs are not there.
func hostileManifest(t *testing.T, n int, size int64) *oci.Artifact {
	t.Helper()
	m := ocispec.Manifest{Config: ocispec.DescriptorEmptyJSON, Layers: make([]ocispec.Descriptor, n)}
	for i := range m.Layers {
		m.Layers[i] = ocispec.Descriptor{MediaType: attach.MediaTypeDSSEEnvelope, Digest: digest.FromString(strings.Repeat("x", i)), Size: size}
	}
	mf, err := oci.EncodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	return &oci.Artifact{Manifests: []oci.Manifest{mf}}
}

// With keys to require, a provider version whose index has no
// attestation verifying with one of them is absent from both listings and
// 404 when asked for directly, with the reason; attested ones are served
// as before.
func TestRequireAttestation(t *testing.T) {
	ctx := context.Background()
	dir, open := layoutStore(t)
	ours, theirs := attesttest.Signer(t), attesttest.Signer(t)

	repo := open("test", "hello")
	pushAttested(t, repo, "1.0.0", ours)
	pushAttested(t, repo, "1.1.0", nil)
	pushAttested(t, repo, "2.0.0-rc1", theirs)

	// Attestations that must never verify, one version each (in the tag
	// schema alone: a valid bundle beside them would admit the version).
	hostile := open("test", "hostile")
	attested := pushTagAttested(t, hostile, "1.0.0", ours)
	held, err := attach.ReadAttachment(ctx, hostile, attested, attach.CosignAttestations)
	if err != nil || len(held) != 1 {
		t.Fatalf("reading the attestation: %v, %d layers", err, len(held))
	}
	tampered := held[0]
	var env map[string]any
	if err := json.Unmarshal(tampered.Payload, &env); err != nil {
		t.Fatal(err)
	}
	body, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
	env["payload"] = base64.StdEncoding.EncodeToString(append(body, ' '))
	tampered.Payload, _ = json.Marshal(env)
	if _, err := attach.WriteAttachment(ctx, hostile, attested, attach.CosignAttestations, []attach.AttachmentLayer{tampered}); err != nil {
		t.Fatal(err)
	}
	other := pushAttested(t, hostile, "1.1.0", nil) // 1.0.0's (valid) attestation, under 1.1.0's tag
	if _, err := attach.WriteAttachment(ctx, hostile, other, attach.CosignAttestations, held); err != nil {
		t.Fatal(err)
	}
	rc := pushAttested(t, hostile, "2.0.0-rc1", nil)
	writeAttachment(t, hostile, rc, hostileManifest(t, 10_000, 64))

	mappings := mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")
	p := startProxy(t, Options{ProviderMappings: mappings, RequireAttestation: []*attest.Verifier{attesttest.Signer(t).Public(), ours.Public()}})
	plain := startProxy(t, Options{ProviderMappings: mappings})

	var idx struct{ Versions map[string]any }
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if len(idx.Versions) != 1 || idx.Versions["1.0.0"] == nil {
		t.Errorf("index.json lists %v, want only the attested 1.0.0", idx.Versions)
	}
	var vd versionsDoc
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	if len(vd.Versions) != 1 || vd.Versions[0].Version != "1.0.0" {
		t.Errorf("versions lists %+v, want only 1.0.0", vd.Versions)
	}
	for _, v := range []string{"1.1.0", "2.0.0-rc1"} {
		if !containsWith(vd.Warnings, v+" is left out: no attestation verifying with the configured keys") {
			t.Errorf("versions warnings %q say nothing of %s", vd.Warnings, v)
		}
	}
	var mv networkMirrorVersion
	p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)
	if len(mv.Archives) != 4 {
		t.Errorf("1.0.0.json: %+v", mv.Archives)
	}
	if r := p.get(t, resolve(t, mustURL(t, p.URL), mv.Archives["linux_amd64"].URL)); r.Status != 200 || !strings.HasSuffix(r.URL.Path, ".zip") {
		t.Errorf("an attested archive: %d", r.Status)
	}
	var d downloadDoc
	p.getJSON(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 200, &d)

	const refused = "no attestation verifying with the configured keys"
	for v, why := range map[string]string{"1.1.0": "no attestation (sha256-", "2.0.0-rc1": "bundles: no signature by the key; attestation: no signature by the key"} {
		p.wantError(t, "/v1/mirror/example.com/test/hello/"+v+".json", 404, refused+" ("+why)
		p.wantError(t, "/v1/providers/test/hello/"+v+"/download/linux/amd64", 404, refused)
		// The archive URLs an unpoliced proxy hands out for it.
		var unpoliced networkMirrorVersion
		r := plain.getJSON(t, "/v1/mirror/example.com/test/hello/"+v+".json", 200, &unpoliced)
		for _, a := range unpoliced.Archives {
			u := strings.TrimPrefix(resolve(t, r.URL, a.URL), plain.URL)
			p.wantError(t, u, 404, refused)
			p.wantError(t, strings.TrimSuffix(u, a.URL[strings.LastIndex(a.URL, "/")+1:])+"terraform-provider-hello_"+v+"_SHA256SUMS", 404, refused)
			break
		}
	}

	var hidx struct{ Versions map[string]any }
	p.getJSON(t, "/v1/mirror/example.com/test/hostile/index.json", 200, &hidx)
	if len(hidx.Versions) != 0 {
		t.Errorf("hostile index.json lists %v, want nothing", hidx.Versions)
	}
	for v, why := range map[string]string{"1.0.0": "no signature by the key", "1.1.0": "another subject", "2.0.0-rc1": "more than the 64 read"} {
		p.wantError(t, "/v1/mirror/example.com/test/hostile/"+v+".json", 404, why)
	}
	var hv versionsDoc
	r := p.get(t, "/v1/providers/test/hostile/versions")
	if err := json.Unmarshal(r.Body, &hv); r.Status != 404 || err != nil || len(hv.Versions) != 0 {
		t.Errorf("hostile versions: %d %s", r.Status, r.Body)
	}
}

// A layer too large to read is refused before it is fetched.
func TestRequireAttestationRefusesOversizedLayers(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	d := pushAttested(t, repo, "1.0.0", nil)
	writeAttachment(t, repo, d, hostileManifest(t, 1, 100<<20))
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), RequireAttestation: []*attest.Verifier{attesttest.Signer(t).Public()}})
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 404, "larger than the")
}

func TestRequireAttestationRefusesPullThrough(t *testing.T) {
	_, err := New(Options{ProviderMappings: mustMapping(t, "oci-layout:/nowhere/${namespace}/${type}"),
		RequireAttestation: []*attest.Verifier{attesttest.Signer(t).Public()}, PullThrough: &pullthrough.Options{}})
	if err == nil || !strings.Contains(err.Error(), "without an attester") {
		t.Errorf("New: %v, want a refusal", err)
	}
}

func containsWith(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
