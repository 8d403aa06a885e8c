package providerdocs_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// subjectIn writes a small index to a repository of target (a layout,
// or a real Distribution registry) for documentation to refer to.
func subjectIn(t *testing.T, target string) (oci.Repository, ocispec.Descriptor) {
	t.Helper()
	var client *oci.Client
	var ref oci.Reference
	var err error
	if target == "layout" {
		client, err = oci.NewClient(oci.Options{})
		ref = oci.Reference{Layout: true, Repository: t.TempDir()}
	} else {
		reg := testenv.StartRegistry(t)
		client, err = oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
		ref = oci.Reference{Registry: reg.Host, Repository: "acme/widgets"}
	}
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	a := &oci.Artifact{Blobs: []oci.Blob{oci.EmptyConfig()}}
	m, err := oci.EncodeManifest(ocispec.Manifest{Config: ocispec.DescriptorEmptyJSON, Layers: []ocispec.Descriptor{}})
	if err != nil {
		t.Fatal(err)
	}
	a.Manifests = []oci.Manifest{m}
	if _, err := oci.Push(context.Background(), repo, a, oci.Tags{}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	return repo, m.Descriptor
}

// bigDocs are pages of random hex, compressing to about 4 MiB: two do
// not fit in one read of a subject's referrers (8 MiB).
func bigDocs(t *testing.T, tag string) *providerdocs.Docs {
	t.Helper()
	d := &providerdocs.Docs{Format: providerdocs.Format}
	for i := range 8 {
		b := make([]byte, 512<<10)
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		d.Pages = append(d.Pages, providerdocs.Page{Category: "resources", Slug: "p" + strconv.Itoa(i), Title: tag, Markdown: hex.EncodeToString(b)})
	}
	return d
}

// Attach stores once, finds the same pages stored, refuses others
// without replace, and with it stores a referrer Read prefers; Read
// gives the replacement even when the two are too large to read
// together.
func TestAttachReplaces(t *testing.T) {
	ctx := context.Background()
	for _, target := range []string{"layout", "distribution"} {
		t.Run(target, func(t *testing.T) {
			repo, subject := subjectIn(t, target)
			if _, _, err := providerdocs.Read(ctx, repo, subject.Digest); !errors.Is(err, providerdocs.ErrNoDocs) {
				t.Fatalf("nothing stored: %v", err)
			}
			first, second := bigDocs(t, "first"), bigDocs(t, "second")
			s, err := providerdocs.Attach(ctx, repo, subject, first, false)
			if err != nil || !s.Written {
				t.Fatalf("%+v %v", s, err)
			}
			if again, err := providerdocs.Attach(ctx, repo, subject, first, false); err != nil || again.Written || again.Referrer.Digest != s.Referrer.Digest {
				t.Fatalf("the same again: %+v %v", again, err)
			}
			if _, err := providerdocs.Attach(ctx, repo, subject, second, false); !errors.Is(err, providerdocs.ErrDiffers) {
				t.Fatalf("others without replace: %v", err)
			}
			r, err := providerdocs.Attach(ctx, repo, subject, second, true)
			if err != nil || !r.Written || len(r.Replaced) != 1 || r.Replaced[0] != s.Referrer.Digest {
				t.Fatalf("replace: %+v %v", r, err)
			}
			for range 5 {
				got, desc, err := providerdocs.Read(ctx, repo, subject.Digest)
				if err != nil || desc.Digest != r.Referrer.Digest || got.Pages[0].Title != "second" {
					t.Fatalf("read after replace: %v, referrer %s, want %s", err, desc.Digest, r.Referrer.Digest)
				}
			}
		})
	}
}

// Parse refuses what a stored document may not hold.
func TestParseRefuses(t *testing.T) {
	for name, d := range map[string]*providerdocs.Docs{
		"unknown category": {Format: 1, Pages: []providerdocs.Page{{Category: "secrets", Slug: "x"}}},
		"bad slug":         {Format: 1, Pages: []providerdocs.Page{{Category: "resources", Slug: "../x"}}},
		"one page twice":   {Format: 1, Pages: []providerdocs.Page{{Category: "resources", Slug: "x", Title: "a"}, {Category: "resources", Slug: "x", Title: "b"}}},
	} {
		b, err := d.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := providerdocs.Parse(b); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
	if _, err := providerdocs.Parse([]byte("not gzip")); err == nil || !strings.Contains(err.Error(), "not gzipped") {
		t.Errorf("not gzip: %v", err)
	}
}

// Read inflates at most two documents' worth of the referrers it tries:
// three small gzip bombs (each inflating past what a document may) are
// not each inflated, and Read says the rest were not read.
func TestReadBoundsWhatItInflates(t *testing.T) {
	ctx := context.Background()
	repo, subject := subjectIn(t, "layout")
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(`{"format":1,"pages":[{"category":"index","slug":"index","markdown":"`))
	_, _ = zw.Write(bytes.Repeat([]byte("a"), 80<<20))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		_, err := attach.WriteReferrer(ctx, repo, subject, providerdocs.ArtifactType,
			[]attach.AttachmentLayer{{MediaType: providerdocs.LayerMediaType, Payload: b.Bytes()}}, map[string]string{"n": strconv.Itoa(i)})
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := providerdocs.Read(ctx, repo, subject.Digest)
	if !errors.Is(err, providerdocs.ErrBadDocs) || !strings.Contains(err.Error(), "were not read") || !strings.Contains(err.Error(), "inflates to more than") {
		t.Errorf("three bombs: %v", err)
	}
}
