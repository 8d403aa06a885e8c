package sbom_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/oci"
)

// An SBOM is stored once as a referrer of its platform manifest and read
// back; a second Attach of the same bytes writes nothing; a manifest
// without one answers ErrNoSBOM.
func TestAttachAndRead(t *testing.T) {
	ctx := context.Background()
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Layout: true, Repository: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	a := seed.HelloArtifact(t, "1.0.0")
	seed.Push(t, repo, a, "1.0.0")
	platform := a.Manifests[0].Descriptor.Digest
	other := a.Manifests[1].Descriptor.Digest
	doc := []byte(`{"spdxVersion":"SPDX-2.3"}`)
	if _, err := sbom.Read(ctx, repo, platform); !errors.Is(err, sbom.ErrNoSBOM) {
		t.Fatalf("Read before Attach: %v", err)
	}
	d, written, err := sbom.Attach(ctx, repo, platform, doc, time.Unix(0, 0))
	if err != nil || !written {
		t.Fatalf("Attach: %v, written %v", err, written)
	}
	again, written, err := sbom.Attach(ctx, repo, platform, doc, time.Unix(0, 0))
	if err != nil || written || again.Digest != d.Digest {
		t.Fatalf("second Attach: %v, written %v, %s want %s", err, written, again.Digest, d.Digest)
	}
	if _, err := sbom.Read(ctx, repo, other); !errors.Is(err, sbom.ErrNoSBOM) {
		t.Fatalf("another platform's SBOM: %v", err)
	}
	// Not an SPDX document this package reads: an error naming the referrer.
	if _, err := sbom.Read(ctx, repo, platform); err == nil || errors.Is(err, sbom.ErrNoSBOM) {
		t.Fatalf("Read of an unparsable SBOM: %v", err)
	}
}
