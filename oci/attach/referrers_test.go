package attach_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// referrerArtifact is a referrer of subject: artifactType, one layer.
func referrerArtifact(t *testing.T, subject ocispec.Descriptor, artifactType, payload string) *oci.Artifact {
	t.Helper()
	l := oci.BytesBlob(artifactType, []byte(payload), nil)
	cfg := oci.BytesBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil)
	m, err := oci.EncodeManifest(ocispec.Manifest{ArtifactType: artifactType, Config: cfg.Descriptor, Layers: []ocispec.Descriptor{l.Descriptor}, Subject: &subject})
	if err != nil {
		t.Fatal(err)
	}
	return &oci.Artifact{Blobs: []oci.Blob{l, cfg}, Manifests: []oci.Manifest{m}}
}

// In an OCI layout that lists its referrers (as oras-go, oras and
// notation write layouts), a subject's referrers of one artifact type are
// found, read and checked; other types and other subjects' are not.
func TestReadReferrersFromLayout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := orasoci.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	subj, other := seed.SmallArtifact(t, "a"), seed.SmallArtifact(t, "b")
	for _, a := range []*oci.Artifact{subj, other,
		referrerArtifact(t, subj.Root(), attach.ArtifactTypeSigstoreBundle, "bundle of a"),
		referrerArtifact(t, subj.Root(), attach.ArtifactTypeNotationSignature, "notation of a"),
		referrerArtifact(t, other.Root(), attach.ArtifactTypeSigstoreBundle, "bundle of b"),
	} {
		if _, err := oci.Push(ctx, store, a, oci.Tags{}, oci.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Tag(ctx, subj.Root(), "1.0.0"); err != nil {
		t.Fatal(err)
	}
	c, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.OpenReadOnly(ctx, oci.Reference{Layout: true, Repository: dir})
	if err != nil {
		t.Fatal(err)
	}
	got, err := attach.ReadReferrers(ctx, repo, subj.Root().Digest, attach.ArtifactTypeSigstoreBundle)
	if err != nil || got.Unsupported || got.Truncated || len(got.Items) != 1 {
		t.Fatalf("referrers %+v, %v; want the one bundle", got, err)
	}
	if r := got.Items[0]; r.Err != nil || len(r.Layers) != 1 || string(r.Layers[0].Payload) != "bundle of a" {
		t.Errorf("referrer %+v", r)
	}
	none, err := attach.ReadReferrers(ctx, repo, digest.FromString("absent"), attach.ArtifactTypeSigstoreBundle)
	if err != nil || len(none.Items) != 0 {
		t.Errorf("an absent subject: %+v, %v", none, err)
	}
}

// A referrer whose layer is larger than oci.MaxSmallFile is refused by
// ReadReferrers (its size, before it is fetched) and read whole by
// ReadReferrersUpTo with a larger bound, which still refuses what passes
// that bound.
func TestReadReferrersUpTo(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := orasoci.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	subj := seed.SmallArtifact(t, "a")
	payload := strings.Repeat("d", oci.MaxSmallFile+1)
	for _, a := range []*oci.Artifact{subj, referrerArtifact(t, subj.Root(), "application/vnd.example.doc", payload)} {
		if _, err := oci.Push(ctx, store, a, oci.Tags{}, oci.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo := mustOpenReadOnly(t, c, dir)
	small, err := attach.ReadReferrers(ctx, repo, subj.Root().Digest, "application/vnd.example.doc")
	if err != nil || len(small.Items) != 1 || small.Items[0].Err == nil || !strings.Contains(small.Items[0].Err.Error(), "larger than the 1048576 byte limit") {
		t.Fatalf("ReadReferrers of a %d-byte layer: %+v, %v", len(payload), small, err)
	}
	large, err := attach.ReadReferrersUpTo(ctx, repo, subj.Root().Digest, "application/vnd.example.doc", 2<<20)
	if err != nil || len(large.Items) != 1 || large.Items[0].Err != nil || string(large.Items[0].Layers[0].Payload) != payload {
		t.Fatalf("ReadReferrersUpTo 2 MiB: %v, %v", large.Items, err)
	}
	tight, err := attach.ReadReferrersUpTo(ctx, repo, subj.Root().Digest, "application/vnd.example.doc", int64(len(payload))-1)
	if err != nil || len(tight.Items) != 1 || tight.Items[0].Err == nil {
		t.Fatalf("ReadReferrersUpTo one byte short: %+v, %v", tight.Items, err)
	}
}

// 10,000 referrers on one index, listed by a registry's referrers API (a
// front of ours answers it for Distribution, which has none): at most
// MaxReferrers are read, with a bounded number of requests, and the
// answer says more exist; a referrer of 100 MiB is refused by its size
// before it is fetched.
func TestReadReferrersIsBounded(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.Open(oci.Reference{Registry: reg.Host, Repository: "p/hostile"})
	if err != nil {
		t.Fatal(err)
	}
	subj := seed.SmallArtifact(t, "hostile")
	if _, err := oci.Push(ctx, repo, subj, oci.Tags{"1.0.0": ""}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	huge := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: attach.ArtifactTypeSigstoreBundle, Digest: digest.FromString("huge"), Size: 100 << 20}
	listing := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{huge}}
	for i := range 10_000 {
		listing.Manifests = append(listing.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: attach.ArtifactTypeSigstoreBundle, Digest: digest.FromString(fmt.Sprint(i)), Size: 600})
	}
	body, err := json.Marshal(listing)
	if err != nil {
		t.Fatal(err)
	}
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{
		Match: func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/referrers/") },
		Fault: testenv.Fault{Status: http.StatusOK, Header: http.Header{"Content-Type": {ocispec.MediaTypeImageIndex}}, Body: body},
	}}})
	ro, err := c.OpenReadOnly(ctx, oci.Reference{Registry: front.Host, Repository: "p/hostile"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := attach.ReadReferrers(ctx, ro, subj.Root().Digest, attach.ArtifactTypeSigstoreBundle)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Truncated || len(got.Items) != attach.MaxReferrers {
		t.Errorf("read %d referrers (truncated %v), want %d and truncated", len(got.Items), got.Truncated, attach.MaxReferrers)
	}
	if e := got.Items[0].Err; e == nil || !strings.Contains(e.Error(), "exceeds the 4 MiB limit") {
		t.Errorf("the 100 MiB referrer: %v, want refused by its size", e)
	}
	requests := front.Log()
	for _, r := range requests {
		if strings.Contains(r.Path, huge.Digest.Encoded()) {
			t.Errorf("the 100 MiB referrer was fetched: %s %s", r.Method, r.Path)
		}
	}
	// The listing, and one manifest per referrer read (not the huge one).
	if max := 1 + attach.MaxReferrers - 1; len(requests) > max {
		t.Errorf("%d registry requests, want at most %d", len(requests), max)
	}
}

// A listing that does not tell the referrers' types (artifactType empty,
// or the empty config's media type, as go-containerregistry's tag schema
// index lists cosign bundles on some registries): each is read, and only
// those of the wanted type are kept.
func TestReadReferrersOfUntoldTypes(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.Open(oci.Reference{Registry: reg.Host, Repository: "p/untold"})
	if err != nil {
		t.Fatal(err)
	}
	subj := seed.SmallArtifact(t, "untold")
	bundle := referrerArtifact(t, subj.Root(), attach.ArtifactTypeSigstoreBundle, "a bundle")
	sig := referrerArtifact(t, subj.Root(), attach.ArtifactTypeNotationSignature, "a signature")
	listing := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex}
	for i, a := range []*oci.Artifact{subj, bundle, sig} {
		if _, err := oci.Push(ctx, repo, a, oci.Tags{fmt.Sprint("t", i): ""}, oci.PushOptions{}); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			d := a.Root()
			d.ArtifactType = []string{"", ocispec.MediaTypeEmptyJSON}[i-1]
			listing.Manifests = append(listing.Manifests, d)
		}
	}
	body, _ := json.Marshal(listing)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{
		Match: func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/referrers/") },
		Fault: testenv.Fault{Status: http.StatusOK, Header: http.Header{"Content-Type": {ocispec.MediaTypeImageIndex}}, Body: body},
	}}})
	ro, err := c.OpenReadOnly(ctx, oci.Reference{Registry: front.Host, Repository: "p/untold"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := attach.ReadReferrers(ctx, ro, subj.Root().Digest, attach.ArtifactTypeSigstoreBundle)
	if err != nil || len(got.Items) != 1 || got.Items[0].Err != nil || got.Items[0].Descriptor.Digest != bundle.Root().Digest {
		t.Errorf("referrers %+v, %v; want the bundle only", got, err)
	}
}

// ProbeReferrers learns that Distribution has no referrers API: the read
// after it asks for the referrers tag only, not the API again.
func TestProbeReferrersLearnsTheAPIIsMissing(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := c.OpenReadOnly(ctx, oci.Reference{Registry: front.Host, Repository: "p/probe"})
	if err != nil {
		t.Fatal(err)
	}
	attach.ProbeReferrers(ctx, ro)
	front.ResetLog()
	if _, err := attach.ReadReferrers(ctx, ro, digest.FromString("a root"), attach.ArtifactTypeSigstoreBundle); err != nil {
		t.Fatal(err)
	}
	log := front.Log()
	if len(log) != 1 || strings.Contains(log[0].Path, "/referrers/") || !strings.Contains(log[0].Path, "/manifests/sha256-") {
		t.Errorf("requests after the probe: %+v; want the referrers tag only", log)
	}
}

// A registry failing while a referrer is read is an error for the caller,
// not a referrer that "cannot be read intact": no verdict is drawn from
// an outage (docs/security.md).
func TestReadReferrersRegistryFailureIsAnError(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.Open(oci.Reference{Registry: reg.Host, Repository: "p/failing"})
	if err != nil {
		t.Fatal(err)
	}
	subj := seed.SmallArtifact(t, "failing")
	bundle := referrerArtifact(t, subj.Root(), attach.ArtifactTypeSigstoreBundle, "a bundle")
	for i, a := range []*oci.Artifact{subj, bundle} {
		if _, err := oci.Push(ctx, repo, a, oci.Tags{fmt.Sprint("t", i): ""}, oci.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d := bundle.Root()
	d.ArtifactType = attach.ArtifactTypeSigstoreBundle
	body, _ := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{d}})
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{
		{Match: func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/referrers/") },
			Fault: testenv.Fault{Status: http.StatusOK, Header: http.Header{"Content-Type": {ocispec.MediaTypeImageIndex}}, Body: body}},
		{Match: func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/manifests/"+d.Digest.String()) },
			Fault: testenv.Fault{Status: http.StatusInternalServerError}},
	}})
	ro, err := c.OpenReadOnly(ctx, oci.Reference{Registry: front.Host, Repository: "p/failing"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := attach.ReadReferrers(ctx, ro, subj.Root().Digest, attach.ArtifactTypeSigstoreBundle)
	if err == nil || oci.IsContentProblem(err) {
		t.Errorf("referrers %+v, %v; want the registry's failure as an error", got, err)
	}
}

// listReferrersAs answers the referrers API of repository name on reg
// with listing, through a front.
func listReferrersAs(t *testing.T, reg *testenv.Registry, c *oci.Client, name string, listing []ocispec.Descriptor) oci.ReadOnlyRepository {
	t.Helper()
	body, err := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: listing})
	if err != nil {
		t.Fatal(err)
	}
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{
		Match: func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/referrers/") },
		Fault: testenv.Fault{Status: http.StatusOK, Header: http.Header{"Content-Type": {ocispec.MediaTypeImageIndex}}, Body: body},
	}}})
	ro, err := c.OpenReadOnly(context.Background(), oci.Reference{Registry: front.Host, Repository: name})
	if err != nil {
		t.Fatal(err)
	}
	return ro
}

// Referrers of another type listed without one (anyone with push rights
// can add them) do not count against the wanted type's bound: 100 of
// them listed first do not hide the bundle listed after them.
func TestUntoldReferrersDoNotHideTheTypedOnes(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.Open(oci.Reference{Registry: reg.Host, Repository: "p/crowded"})
	if err != nil {
		t.Fatal(err)
	}
	subj := seed.SmallArtifact(t, "crowded")
	bundle := referrerArtifact(t, subj.Root(), attach.ArtifactTypeSigstoreBundle, "the bundle")
	sig := referrerArtifact(t, subj.Root(), attach.ArtifactTypeNotationSignature, "another type")
	for i, a := range []*oci.Artifact{subj, bundle, sig} {
		if _, err := oci.Push(ctx, repo, a, oci.Tags{fmt.Sprint("t", i): ""}, oci.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var listing []ocispec.Descriptor
	for range 100 {
		d := sig.Root()
		d.ArtifactType = ""
		listing = append(listing, d)
	}
	listing = append(listing, bundle.Root())
	got, err := attach.ReadReferrers(ctx, listReferrersAs(t, reg, c, "p/crowded", listing), subj.Root().Digest, attach.ArtifactTypeSigstoreBundle)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != 1 || got.Items[0].Err != nil || got.Items[0].Descriptor.Digest != bundle.Root().Digest {
		t.Errorf("referrers %+v; want the bundle", got)
	}
}

// One subject's referrers are read up to MaxReferrerBytes in all: ten
// referrers of four 1 MiB layers each (40 MiB that the per-referrer
// limits allow) are not all taken in, and the answer says more exist.
func TestReferrersReadWithinATotalBudget(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := c.Open(oci.Reference{Registry: reg.Host, Repository: "p/heavy"})
	if err != nil {
		t.Fatal(err)
	}
	subj := seed.SmallArtifact(t, "heavy")
	a := &oci.Artifact{Blobs: subj.Blobs, Manifests: subj.Manifests}
	if _, err := oci.Push(ctx, repo, a, oci.Tags{"s": ""}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	var listing []ocispec.Descriptor
	for i := range 10 {
		r := heavyReferrer(t, subj.Root(), i)
		if _, err := oci.Push(ctx, repo, r, oci.Tags{fmt.Sprint("r", i): ""}, oci.PushOptions{}); err != nil {
			t.Fatal(err)
		}
		listing = append(listing, r.Root())
	}
	got, err := attach.ReadReferrers(ctx, listReferrersAs(t, reg, c, "p/heavy", listing), subj.Root().Digest, attach.ArtifactTypeSigstoreBundle)
	if err != nil {
		t.Fatal(err)
	}
	var held int
	for _, r := range got.Items {
		for _, l := range r.Layers {
			held += len(l.Payload)
		}
	}
	if held > attach.MaxReferrerBytes || !got.Truncated {
		t.Errorf("took in %d bytes of layers (truncated %v), want at most %d and truncated", held, got.Truncated, attach.MaxReferrerBytes)
	}
	if held == 0 {
		t.Error("nothing read: the budget should admit the first referrers")
	}
}

// heavyReferrer is a bundle-typed referrer of subject with four layers
// of just under 1 MiB each.
func heavyReferrer(t *testing.T, subject ocispec.Descriptor, i int) *oci.Artifact {
	t.Helper()
	cfg := oci.BytesBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil)
	a := &oci.Artifact{Blobs: []oci.Blob{cfg}}
	var layers []ocispec.Descriptor
	for j := range 4 {
		l := oci.BytesBlob(attach.ArtifactTypeSigstoreBundle, []byte(strings.Repeat(fmt.Sprint(i, j), 1<<20)[:1<<20-64]), nil)
		a.Blobs = append(a.Blobs, l)
		layers = append(layers, l.Descriptor)
	}
	m, err := oci.EncodeManifest(ocispec.Manifest{ArtifactType: attach.ArtifactTypeSigstoreBundle, Config: cfg.Descriptor, Layers: layers, Subject: &subject})
	if err != nil {
		t.Fatal(err)
	}
	a.Manifests = []oci.Manifest{m}
	return a
}

// WriteReferrer into a layout oci-tofu writes: index.json lists the
// referrer (untagged) after the tags, as oras does, so that a reader of
// the directory finds it; it stays listed when the layout is opened again
// and more is tagged; a referrer of a subject the layout lacks is refused.
func TestWriteReferrerIntoLayout(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	open := func() oci.Repository {
		repo, err := c.Open(oci.Reference{Layout: true, Repository: dir})
		if err != nil {
			t.Fatal(err)
		}
		return repo
	}
	subj := seed.SmallArtifact(t, "a")
	repo := open()
	if _, err := oci.Push(ctx, repo, subj, oci.Tags{"1.0.0": ""}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	layer := attach.AttachmentLayer{MediaType: attach.ArtifactTypeSigstoreBundle, Payload: []byte(`{"bundle":1}`)}
	ref, err := attach.WriteReferrer(ctx, repo, ocispec.Descriptor{Digest: subj.Root().Digest}, attach.ArtifactTypeSigstoreBundle, []attach.AttachmentLayer{layer}, map[string]string{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := attach.WriteReferrer(ctx, repo, ocispec.Descriptor{Digest: digest.FromString("absent")}, attach.ArtifactTypeSigstoreBundle, []attach.AttachmentLayer{layer}, nil); err == nil {
		t.Error("a referrer of a manifest the layout lacks was written")
	}
	listed := func() []ocispec.Descriptor {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		var idx ocispec.Index
		if err := json.Unmarshal(b, &idx); err != nil {
			t.Fatal(err)
		}
		return idx.Manifests
	}
	if got := listed(); len(got) != 2 || got[0].Annotations[ocispec.AnnotationRefName] != "1.0.0" ||
		got[1].Digest != ref.Digest || got[1].ArtifactType != attach.ArtifactTypeSigstoreBundle || got[1].Annotations[ocispec.AnnotationRefName] != "" {
		t.Fatalf("index.json lists %+v; want the tag, then the referrer untagged", got)
	}

	// Opened again, another version tagged: the referrer is still listed.
	other := seed.SmallArtifact(t, "b")
	if _, err := oci.Push(ctx, open(), other, oci.Tags{"1.1.0": ""}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := listed(); len(got) != 3 || got[2].Digest != ref.Digest {
		t.Fatalf("after another push, index.json lists %+v", got)
	}
	for name, r := range map[string]oci.ReadOnlyRepository{"for writing": open(), "read-only": mustOpenReadOnly(t, c, dir)} {
		got, err := attach.ReadReferrers(ctx, r, subj.Root().Digest, attach.ArtifactTypeSigstoreBundle)
		if err != nil || len(got.Items) != 1 || got.Items[0].Descriptor.Digest != ref.Digest || string(got.Items[0].Layers[0].Payload) != `{"bundle":1}` || got.Items[0].Annotations["k"] != "v" {
			t.Errorf("%s: referrers %+v, %v", name, got, err)
		}
	}
	// oras-go's own store (what oras reads a layout with) finds it too.
	store, err := orasoci.NewFromFS(ctx, os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	preds, err := store.Predecessors(ctx, subj.Root())
	if err != nil || len(preds) != 1 || preds[0].Digest != ref.Digest {
		t.Errorf("oras-go's predecessors of the subject: %v, %v", preds, err)
	}
}

func mustOpenReadOnly(t *testing.T, c *oci.Client, dir string) oci.ReadOnlyRepository {
	t.Helper()
	r, err := c.OpenReadOnly(context.Background(), oci.Reference{Layout: true, Repository: dir})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
