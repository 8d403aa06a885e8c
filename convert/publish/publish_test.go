package publish_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
)

// watched is an OCI layout that tells before each tag is written, and
// is slow to take a Sigstore bundle referrer: a push that tags before
// its referrers are written is caught at it.
type watched struct {
	*orasoci.Store
	mu     sync.Mutex
	before func(ctx context.Context, root ocispec.Descriptor, tag string)
}

func (w *watched) Push(ctx context.Context, desc ocispec.Descriptor, r io.Reader) error {
	if desc.ArtifactType == attach.ArtifactTypeSigstoreBundle {
		time.Sleep(100 * time.Millisecond)
	}
	return w.Store.Push(ctx, desc, r)
}

func (w *watched) Tag(ctx context.Context, desc ocispec.Descriptor, tag string) error {
	w.mu.Lock()
	before := w.before
	w.mu.Unlock()
	if before != nil && tag != versionindex.Tag { // the version index is no version's tag
		before(ctx, desc, tag)
	}
	return w.Store.Tag(ctx, desc, tag)
}

func (w *watched) watch(f func(ctx context.Context, root ocispec.Descriptor, tag string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.before = f
}

func newWatched(t *testing.T) *watched {
	t.Helper()
	s, err := orasoci.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &watched{Store: s}
}

// versionTags records the version tags (not cosign's sha256-<hex>.sig,
// .att) a push writes.
type versionTags struct {
	mu   sync.Mutex
	tags []string
}

func (v *versionTags) add(tag string) bool {
	if strings.HasPrefix(tag, "sha256-") {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.tags = append(v.tags, tag)
	return true
}

func (v *versionTags) written() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.tags...)
}

var helloRef = oci.Reference{Registry: "registry.example.com", Repository: "acme/hello"}

// A reader never finds a version tag of a release pushed with a key
// before the root's signature and attestation referrers are there; once
// the push returns, both forms (referrers and cosign's tag schema) are,
// and each platform's SBOM is attested.
func TestPushProviderAttestsBeforeAnyTag(t *testing.T) {
	ctx := context.Background()
	repo := newWatched(t)
	var seen versionTags
	repo.watch(func(ctx context.Context, root ocispec.Descriptor, tag string) {
		if !seen.add(tag) {
			return
		}
		held, err := attach.ReadReferrers(ctx, repo.Store, root.Digest, attach.ArtifactTypeSigstoreBundle)
		if err != nil || len(held.Items) < 2 {
			t.Errorf("tag %s written while %s has %d bundle referrers (%v), want its signature and attestation", tag, root.Digest, len(held.Items), err)
		}
	})
	key := &publish.KeyAttester{Signer: attesttest.Signer(t), Version: "test", Log: t.Logf}
	rel := seed.Hello(t)
	res, err, attestErr := publish.PushProvider(ctx, rel, publish.ProviderTarget{Target: publish.Target{Repo: repo, Ref: helloRef, Also: []string{"latest"}, Attest: key}})
	if err != nil || attestErr != nil || res.UpToDate {
		t.Fatalf("%+v %v %v", res, err, attestErr)
	}
	if got := seen.written(); len(got) != 2 {
		t.Errorf("version tags written: %v, want 1.0.0 and latest", got)
	}
	if ok, err := attest.Complete(ctx, repo, res.Root.Digest, key.Key(), release.ProviderPredicateType); !ok || err != nil {
		t.Errorf("the pushed root is not signed and attested in both forms: %v", err)
	}
	if rel.Repository != helloRef.Repository {
		t.Errorf("the release records repository %q, want %q", rel.Repository, helloRef.Repository)
	}
	for _, r := range rel.SBOMs() {
		if r.Status != release.SBOMWritten || !r.Attested {
			t.Errorf("%s: SBOM %s, attested %v", r.Platform, r.Status, r.Attested)
			continue
		}
		if ok, err := attest.AttestationComplete(ctx, repo, r.Manifest, key.Key(), sbom.SPDXPredicateType); !ok || err != nil {
			t.Errorf("%s: the SBOM's attestation is not complete: %v", r.Platform, err)
		}
	}
}

// A release its tags already hold is attested after the push, which
// writes no tag.
func TestPushProviderUpToDateIsAttestedAfter(t *testing.T) {
	ctx := context.Background()
	repo := newWatched(t)
	first, err, _ := publish.PushProvider(ctx, seed.Hello(t), publish.ProviderTarget{Target: publish.Target{Repo: repo, Ref: helloRef}})
	if err != nil {
		t.Fatal(err)
	}
	var seen versionTags
	repo.watch(func(_ context.Context, _ ocispec.Descriptor, tag string) { seen.add(tag) })
	key := &publish.KeyAttester{Signer: attesttest.Signer(t), Version: "test"}
	if ok, _ := attest.Complete(ctx, repo, first.Root.Digest, key.Key(), release.ProviderPredicateType); ok {
		t.Fatal("attested before the key was used")
	}
	res, err, attestErr := publish.PushProvider(ctx, seed.Hello(t), publish.ProviderTarget{Target: publish.Target{Repo: repo, Ref: helloRef, Attest: key}})
	if err != nil || attestErr != nil || !res.UpToDate || res.Root.Digest != first.Root.Digest {
		t.Fatalf("%+v %v %v", res, err, attestErr)
	}
	if got := seen.written(); len(got) != 0 {
		t.Errorf("an up-to-date push wrote version tags %v", got)
	}
	if ok, err := attest.Complete(ctx, repo, res.Root.Digest, key.Key(), release.ProviderPredicateType); !ok || err != nil {
		t.Errorf("the up-to-date root is not signed and attested in both forms: %v", err)
	}
}

// An imported release (push mirror) is attested after its tags, and its
// repository is not recorded in it.
func TestPushProviderImportedIsAttestedAfterTags(t *testing.T) {
	ctx := context.Background()
	repo := newWatched(t)
	var seen versionTags
	repo.watch(func(ctx context.Context, root ocispec.Descriptor, tag string) {
		if !seen.add(tag) {
			return
		}
		if held, err := attach.ReadReferrers(ctx, repo.Store, root.Digest, attach.ArtifactTypeSigstoreBundle); err != nil || len(held.Items) != 0 {
			t.Errorf("tag %s written after %d bundle referrers (%v): an import attests after its tags", tag, len(held.Items), err)
		}
	})
	key := &publish.KeyAttester{Signer: attesttest.Signer(t), Version: "test"}
	rel := seed.Hello(t)
	res, err, attestErr := publish.PushProvider(ctx, rel, publish.ProviderTarget{Target: publish.Target{Repo: repo, Ref: helloRef, Attest: key}, NoSBOM: true, Imported: true})
	if err != nil || attestErr != nil {
		t.Fatalf("%+v %v %v", res, err, attestErr)
	}
	if ok, err := attest.Complete(ctx, repo, res.Root.Digest, key.Key(), release.ProviderPredicateType); !ok || err != nil {
		t.Errorf("the imported root is not signed and attested: %v", err)
	}
	if rel.Repository != "" || len(rel.SBOMs()) != 0 && rel.SBOMs()[0].Status != release.SBOMSkipped {
		t.Errorf("repository %q, SBOMs %+v", rel.Repository, rel.SBOMs())
	}
}
