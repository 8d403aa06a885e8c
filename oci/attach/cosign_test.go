package attach

import (
	"strconv"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/opencontainers/go-digest"
)

func TestAttachmentTags(t *testing.T) {
	d := digest.FromString("index")
	for _, kind := range []AttachmentKind{CosignSignatures, CosignAttestations} {
		tag := AttachmentTag(d, kind)
		if tag != "sha256-"+d.Encoded()+"."+string(kind) || !IsAttachmentTag(tag) || oci.IsVersionTag(tag) {
			t.Errorf("AttachmentTag(%s) = %s", kind, tag)
		}
	}
	// The referrers tag schema's tag (cosign v3, notation, oras).
	if tag := "sha256-" + d.Encoded(); !IsAttachmentTag(tag) || oci.IsVersionTag(tag) {
		t.Errorf("IsAttachmentTag(%q) = false", tag)
	}
	for _, tag := range []string{"1.0.0", "latest", "sha256-abc.sig", "sha256-abc", "sha512-" + d.Encoded() + ".sig"} {
		if IsAttachmentTag(tag) {
			t.Errorf("IsAttachmentTag(%q) = true", tag)
		}
	}
}

// The manifest cosign's tag schema holds: an OCI image manifest with the
// image config go-containerregistry writes, one annotated layer each.
func TestBuildAttachmentIsCosignsLayout(t *testing.T) {
	a, err := BuildAttachment([]AttachmentLayer{{MediaType: MediaTypeCosignSimpleSigning, Payload: []byte("{}"), Annotations: map[string]string{AnnotationCosignSignature: "c2ln"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"` +
		a.Blobs[1].Descriptor.Digest.String() + `","size":` + strconv.FormatInt(a.Blobs[1].Descriptor.Size, 10) + `},"layers":[{"mediaType":"application/vnd.dev.cosign.simplesigning.v1+json","digest":"` +
		digest.FromString("{}").String() + `","size":2,"annotations":{"dev.cosignproject.cosign/signature":"c2ln"}}]}`
	if got := string(a.Manifests[0].Bytes); got != want {
		t.Errorf("manifest\n got %s\nwant %s", got, want)
	}
	config, _ := attachmentConfig([]digest.Digest{digest.FromString("{}")})
	wantConfig := `{"architecture":"","created":"0001-01-01T00:00:00Z","history":[{"created":"0001-01-01T00:00:00Z"}],"os":"","rootfs":{"type":"layers","diff_ids":["` + digest.FromString("{}").String() + `"]},"config":{}}`
	if string(config) != wantConfig {
		t.Errorf("config\n got %s\nwant %s", config, wantConfig)
	}
}
