package release_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Push stores every platform's SBOM before the tag, dated by the
// signature; a re-push writes none; a release pushed without SBOMs gets
// them from a re-push, byte for byte the same.
func TestPushStoresSBOMs(t *testing.T) {
	ctx := context.Background()
	keys := []*pgp.Keyring{mustKeyring(t, "gpg-signer.asc")}
	dir := fixture(t, "providers", "hello", "1.0.0")
	read := func() *release.Provider {
		rel, err := release.ReadProvider(ctx, dir, release.Options{Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		return rel
	}
	repo, err := orasoci.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rel := read()
	sig, _ := os.ReadFile(filepath.Join(dir, "terraform-provider-hello_1.0.0_SHA256SUMS.sig"))
	signed := pgp.SignatureTime(sig)
	if signed.IsZero() {
		t.Fatal("the fixture's signature has no time")
	}
	var attested []digest.Digest
	var mu sync.Mutex
	var later atomic.Int32 // the writes left for while tagging, done
	rel.SBOM.Attest = func(ctx context.Context, repo oci.Repository, s release.StoredSBOM) (release.SBOMAttested, error) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := repo.Resolve(ctx, "1.0.0"); !oci.IsNotFound(err) {
			t.Errorf("attesting %s: the tag is there already (%v)", s.Manifest.Digest, err)
		}
		if !s.Written || !s.Fresh {
			t.Errorf("%s: not written (%v) or not fresh (%v)", s.Manifest.Digest, s.Written, s.Fresh)
		}
		if s.Manifest.MediaType != ocispec.MediaTypeImageManifest || s.Manifest.Size == 0 {
			t.Errorf("%s: descriptor %+v", s.Manifest.Digest, s.Manifest)
		}
		attested = append(attested, s.Manifest.Digest)
		return release.SBOMAttested{Attested: true, WhileTagging: func(context.Context) error {
			time.Sleep(10 * time.Millisecond) // Push returns once it is done
			later.Add(1)
			return nil
		}}, nil
	}
	res, err := rel.Push(ctx, repo, oci.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := later.Load(); n != 4 {
		t.Errorf("the writes left for while tagging: %d of 4 done when Push returned", n)
	}
	pv, err := oci.ReadProviderIndex(ctx, repo, res.Root)
	if err != nil {
		t.Fatal(err)
	}
	got := rel.SBOMs()
	if len(got) != 4 || len(attested) != 4 {
		t.Fatalf("SBOMs %+v, attested %v", got, attested)
	}
	first := map[names.Platform][]byte{}
	for _, r := range got {
		if r.Status != release.SBOMWritten || !r.Attested || r.Manifest != pv.Platforms[r.Platform].Digest {
			t.Errorf("%+v; manifest %s", r, pv.Platforms[r.Platform].Digest)
		}
		st, err := sbom.Read(ctx, repo, r.Manifest)
		if err != nil {
			t.Fatalf("%s: %v", r.Platform, err)
		}
		if st.Referrer.Digest != r.Referrer || !st.Doc.Created.Equal(signed) || st.Doc.Platform != r.Platform.String() || st.Doc.Version != "1.0.0" || len(st.Doc.Executables) != 1 {
			t.Errorf("%s: %+v", r.Platform, st.Doc)
		}
		first[r.Platform] = st.SPDX
	}

	// A re-push finds them.
	again := read()
	res2, err := again.Push(ctx, repo, oci.PushOptions{})
	if err != nil || !res2.UpToDate {
		t.Fatalf("%+v %v", res2, err)
	}
	for _, r := range again.SBOMs() {
		if r.Status != release.SBOMPresent {
			t.Errorf("re-push: %+v", r)
		}
		held, _ := attach.ReadReferrers(ctx, repo, r.Manifest, sbom.SPDXMediaType)
		if len(held.Items) != 1 {
			t.Errorf("%s: %d SBOM referrers", r.Platform, len(held.Items))
		}
	}

	// Pushed without SBOMs elsewhere: none; a re-push adds the same bytes.
	other, err := orasoci.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	skip := read()
	skip.SBOM.Skip = true
	if _, err := skip.Push(ctx, other, oci.PushOptions{}); err != nil || skip.SBOMs() != nil {
		t.Fatalf("--no-sbom: %v %+v", err, skip.SBOMs())
	}
	for _, d := range pv.Platforms {
		if _, err := sbom.Read(ctx, other, d.Digest); !errors.Is(err, sbom.ErrNoSBOM) {
			t.Fatalf("pushed without SBOMs: %v", err)
		}
	}
	late := read()
	if res, err := late.Push(ctx, other, oci.PushOptions{}); err != nil || !res.UpToDate {
		t.Fatalf("%+v %v", res, err)
	}
	for _, r := range late.SBOMs() {
		st, err := sbom.Read(ctx, other, r.Manifest)
		if r.Status != release.SBOMWritten || err != nil || !bytes.Equal(st.SPDX, first[r.Platform]) {
			t.Errorf("%+v: %v; the SBOM differs from the first push's", r, err)
		}
	}

	// A push that failed before its tag left the manifests and their
	// SBOMs: the next finds them there (it did not write the manifests,
	// so it looks) and writes no second SBOM.
	third, err := orasoci.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	failed := read()
	stop := errors.New("stopped before the tag")
	if _, err := failed.Push(ctx, third, oci.PushOptions{BeforeTag: func(context.Context, ocispec.Descriptor) error { return stop }}); !errors.Is(err, stop) {
		t.Fatalf("the interrupted push: %v", err)
	}
	resumed := read()
	if _, err := resumed.Push(ctx, third, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range resumed.SBOMs() {
		held, _ := attach.ReadReferrers(ctx, third, r.Manifest, sbom.SPDXMediaType)
		if r.Status != release.SBOMPresent || len(held.Items) != 1 {
			t.Errorf("after an interrupted push: %+v, %d SBOM referrers", r, len(held.Items))
		}
	}
}

// BackfillSBOMs gives a version pushed without SBOMs the ones Push makes,
// from the registry's zips; a second run writes nothing.
func TestBackfillSBOMs(t *testing.T) {
	ctx := context.Background()
	keys := []*pgp.Keyring{mustKeyring(t, "gpg-signer.asc")}
	dir := fixture(t, "providers", "hello", "1.0.0")
	push := func(skip bool) (oci.Repository, *oci.ProviderVersion) {
		repo, err := orasoci.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		rel, err := release.ReadProvider(ctx, dir, release.Options{Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		rel.SBOM.Skip = skip
		res, err := rel.Push(ctx, repo, oci.PushOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv, err := oci.ReadProviderIndex(ctx, repo, res.Root)
		if err != nil {
			t.Fatal(err)
		}
		return repo, pv
	}
	want, pv := push(false)
	repo, _ := push(true)
	for run, status := range []release.SBOMStatus{release.SBOMWritten, release.SBOMPresent} {
		got, err := release.BackfillSBOMs(ctx, repo, pv, "ignored", nil, release.SBOMOptions{})
		if err != nil || len(got) != 4 {
			t.Fatalf("run %d: %+v %v", run, got, err)
		}
		for _, r := range got {
			a, err1 := sbom.Read(ctx, repo, r.Manifest)
			b, err2 := sbom.Read(ctx, want, r.Manifest)
			if r.Status != status || err1 != nil || err2 != nil || !bytes.Equal(a.SPDX, b.SPDX) {
				t.Errorf("run %d: %+v %v %v: the backfilled SBOM differs from the pushed one", run, r, err1, err2)
			}
		}
	}
	one, err := release.BackfillSBOMs(ctx, repo, pv, "", []names.Platform{{OS: "linux", Arch: "arm64"}}, release.SBOMOptions{})
	if err != nil || len(one) != 1 || one[0].Platform.String() != "linux_arm64" {
		t.Fatalf("%+v %v", one, err)
	}
}
