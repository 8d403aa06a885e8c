package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Someone who may push tags into the held-address index, but not the
// repositories it names, adds tags of their own beside a real entry:
// dot segments, paths outside the template's prefix or deeper than it,
// upper case, the index itself, and hashed entries whose manifests name
// paths that do not hash to their tags. Held lists the real entry and
// nothing else, and never fails for them.
func TestHeldIndexIgnoresForgedTags(t *testing.T) {
	ctx := context.Background()
	rs, client := heldSetup(t)
	denying := testenv.StartFrontFor(t, rs.reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Match: matchCatalog,
		Fault: testenv.ErrorAnswer(http.StatusForbidden, "DENIED", "denied")}}})
	index := oci.Reference{Registry: denying.Host, Repository: "acme/providers/held/index"}
	writer, err := client.Open(index)
	if err != nil {
		t.Fatal(err)
	}
	if err := oci.WriteHeldEntry(ctx, writer, "acme/providers/b/two"); err != nil {
		t.Fatal(err)
	}
	shared, body, err := oci.FetchReference(ctx, writer, oci.HeldEntryTag("acme/providers/b/two"))
	if err != nil {
		t.Fatal(err)
	}
	forged := []string{
		"RacmeSprovidersS..Sx", "R..SacmeSprovidersSaSone", "RacmeSprovidersSaSoneSmore", "RzedSz",
		"RacmeSprovidersSSaSone", "RacmeSprovidersSaSone.", "RACMESprovidersSqSq", "RacmeSprovidersSheldSindex",
		"RacmeSprovidersS-aSone", "Racme/providers/a/one", "R", "RS", "H" + strings.Repeat("0", 64),
	}
	for _, tag := range forged {
		if _, err := oras.TagBytes(ctx, writer, shared.MediaType, body, tag); err != nil && tag != "Racme/providers/a/one" {
			t.Fatalf("tagging %s: %v", tag, err)
		}
	}
	// A hashed tag whose manifest names a path of the template that does
	// not hash to it, and one naming a path outside the template.
	for _, named := range []string{"acme/providers/c/three", "elsewhere/" + strings.Repeat("e", 130)} {
		m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, ArtifactType: oci.ArtifactTypeHeldEntry,
			Config: ocispec.DescriptorEmptyJSON, Layers: []ocispec.Descriptor{ocispec.DescriptorEmptyJSON},
			Annotations: map[string]string{oci.AnnotationHeldRepository: named}}
		enc, err := oci.EncodeManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(named + "x"))
		tag := "H" + hex.EncodeToString(sum[:])
		if named != "acme/providers/c/three" {
			tag = oci.HeldEntryTag(named)
		}
		if _, err := oras.TagBytes(ctx, writer, enc.Descriptor.MediaType, enc.Bytes, tag); err != nil {
			t.Fatal(err)
		}
	}
	tpl := providerTemplate(t, denying.Host+"/acme/providers/${namespace}/${type}")
	h, err := newStore(t, store.Options{Client: client, HeldIndex: index}).Held(ctx, tpl)
	want := []map[string]string{{"namespace": "b", "type": "two"}}
	if err != nil || h.CanList || !h.Indexed || !sameValues(h.Values, want) || len(h.Repositories) != 1 {
		t.Errorf("an index with forged tags: %+v %v, want only %v", h, err, want)
	}
}
