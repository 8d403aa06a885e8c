package proxy

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// pushBundleAttested pushes version to repo and attests its index only as
// cosign v3 does by default: a Sigstore bundle (a DSSE envelope of an
// in-toto statement signed by s) in a referrer of the index; on a
// registry without the referrers API oras-go lists it under the
// sha256-<hex> tag. It returns the index's digest.
func pushBundleAttested(t *testing.T, repo oci.Repository, version string, s *attest.Signer) digest.Digest {
	t.Helper()
	ctx := context.Background()
	a := releaseArtifact(t, version)
	push(t, repo, a, version)
	root := a.Root()
	statement, _ := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v0.1",
		"subject":       []map[string]any{{"name": "example.com/test/hello", "digest": map[string]string{"sha256": root.Digest.Encoded()}}},
		"predicateType": pubrelease.ProviderPredicateType,
		"predicate":     map[string]string{"version": version},
	})
	const payloadType = "application/vnd.in-toto+json"
	sig, err := s.Sign([]byte(fmt.Sprintf("DSSEv1 %d %s %d %s", len(payloadType), payloadType, len(statement), statement)))
	if err != nil {
		t.Fatal(err)
	}
	bundle, _ := json.Marshal(map[string]any{
		"mediaType": attach.ArtifactTypeSigstoreBundle,
		"dsseEnvelope": map[string]any{
			"payload": base64.StdEncoding.EncodeToString(statement), "payloadType": payloadType,
			"signatures": []map[string]string{{"sig": base64.StdEncoding.EncodeToString(sig)}},
		},
	})
	layer := oci.BytesBlob(attach.ArtifactTypeSigstoreBundle, bundle, nil)
	cfg := oci.BytesBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil)
	m, err := oci.EncodeManifest(ocispec.Manifest{ArtifactType: attach.ArtifactTypeSigstoreBundle, Config: cfg.Descriptor, Layers: []ocispec.Descriptor{layer.Descriptor}, Subject: &root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Push(ctx, repo, &oci.Artifact{Blobs: []oci.Blob{layer, cfg}, Manifests: []oci.Manifest{m}}, oci.Tags{}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	return root.Digest
}
