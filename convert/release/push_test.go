package release_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func TestPushProviderReleaseUpToDateWithoutRehashing(t *testing.T) {
	ctx := context.Background()
	repo, err := orasoci.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keys := []*pgp.Keyring{mustKeyring(t, "gpg-signer.asc")}
	dir := fixture(t, "providers", "hello", "1.0.0")
	rel, err := release.ReadProvider(ctx, dir, release.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	first, err := rel.Push(ctx, repo, oci.PushOptions{})
	// Into an empty repository: 4 zips, the empty config, provenance config
	// and 4 files, 4 platform manifests, provenance manifest, index.
	if err != nil || first.UpToDate || first.Skipped != 0 || first.Uploaded != 4+1+5+4+1+1 {
		t.Fatalf("%+v %v", first, err)
	}
	again, err := release.ReadProvider(ctx, dir, release.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	res, err := again.Push(ctx, repo, oci.PushOptions{})
	if err != nil || !res.UpToDate || res.Root.Digest != first.Root.Digest {
		t.Fatalf("%+v %v", res, err)
	}
	// A subset of platforms is different content for the same version:
	// refused unless replacing, then pushed (and hashed).
	sub, _ := release.ReadProvider(ctx, dir, release.Options{Keys: keys, Platforms: []names.Platform{{OS: "linux", Arch: "amd64"}}})
	if _, err := sub.Push(ctx, repo, oci.PushOptions{}); !errors.Is(err, release.ErrVersionExists) {
		t.Fatalf("overwrite without replace: %v", err)
	}
	if d, _ := repo.Resolve(ctx, "1.0.0"); d.Digest != first.Root.Digest {
		t.Fatal("refused push moved the tag")
	}
	res, err = sub.Push(ctx, repo, oci.PushOptions{Replace: true})
	if err != nil || res.UpToDate || res.Root.Digest == first.Root.Digest {
		t.Fatalf("%+v %v", res, err)
	}
	pv, err := oci.ReadProviderIndex(ctx, repo, res.Root)
	if err != nil || pv.Provenance == nil {
		t.Fatalf("%+v %v", pv, err)
	}
	prov, _, err := oci.ReadProvenance(ctx, repo, *pv.Provenance)
	if err != nil || prov.Platforms["linux_amd64"].H1 != tofuH1["linux_amd64"] {
		t.Fatalf("stored h1: %+v %v", prov, err)
	}
	// Each of the 10 blobs and manifests is counted once, uploaded or found:
	// 1 zip, 2 configs, 4 provenance files, 2 manifests, the index.
	if res.Uploaded+res.Skipped != 10 || res.Skipped == 0 {
		t.Fatalf("counts: %+v", res)
	}
}

// Zips are read only when something is to be written:
// a tampered zip is refused before any write to a repository lacking the
// release, while a re-push to one holding it reads no zip at all.
func TestPushProviderReleaseDeferredZipCheck(t *testing.T) {
	ctx := context.Background()
	keys := []*pgp.Keyring{mustKeyring(t, "gpg-signer.asc")}
	dir := copyRelease(t, "providers", "hello", "1.0.0")
	opts := release.Options{Keys: keys}
	holding, _ := orasoci.New(t.TempDir())
	rel, err := release.ReadProvider(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rel.Push(ctx, holding, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(dir, "terraform-provider-hello_1.0.0_linux_arm64.zip"), os.O_WRONLY, 0)
	f.WriteAt([]byte("XX"), 100)
	f.Close()

	rel, err = release.ReadProvider(ctx, dir, opts)
	if err != nil {
		t.Fatalf("deferred read looked at the zip: %v", err)
	}
	res, err := rel.Push(ctx, holding, oci.PushOptions{})
	if err != nil || !res.UpToDate {
		t.Fatalf("registry holds the signed release: %+v %v", res, err)
	}
	freshDir := t.TempDir()
	fresh, _ := orasoci.New(freshDir)
	rel, _ = release.ReadProvider(ctx, dir, opts)
	if _, err := rel.Push(ctx, fresh, oci.PushOptions{}); err == nil || !strings.Contains(err.Error(), "linux_arm64.zip: sha256") {
		t.Fatalf("tampered zip: %v", err)
	}
	if _, err := fresh.Resolve(ctx, "1.0.0"); err == nil {
		t.Fatal("tagged after a refused push")
	}
	var blobs int
	filepath.Walk(filepath.Join(freshDir, "blobs"), func(string, os.FileInfo, error) error { blobs++; return nil })
	if blobs > 2 { // blobs/ and blobs/sha256/ at most: nothing was written
		t.Fatalf("%d blob paths written before verification", blobs)
	}
}

// A release pushed by an earlier oci-tofu (an index without the provenance
// summary annotations) is recognised as the same release: up to date, not
// "different content".
func TestPushRecognisesUnannotatedIndex(t *testing.T) {
	ctx := context.Background()
	repo, _ := orasoci.New(t.TempDir())
	rel, err := release.ReadProvider(ctx, fixture(t, "providers", "hello", "1.0.0"), release.Options{Keys: []*pgp.Keyring{mustKeyring(t, "gpg-signer.asc")}})
	if err != nil {
		t.Fatal(err)
	}
	current, err := rel.Artifact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pv, _ := oci.ParseProviderIndex(current.Root(), current.Manifests[len(current.Manifests)-1].Bytes)
	if pv.Summary == nil || pv.Summary.Protocols[0] != "6.0" || len(pv.Summary.SigningKeyIDs) != 1 {
		t.Fatalf("summary: %+v", pv.Summary)
	}
	// The same release as earlier versions wrote it.
	legacy := unannotated(t, current)
	if _, err := oci.Push(ctx, repo, legacy, oci.Tags{"1.0.0": ""}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := rel.Push(ctx, repo, oci.PushOptions{})
	if err != nil || !res.UpToDate || res.Root.Digest != legacy.Root().Digest {
		t.Fatalf("re-push over the unannotated index: %+v %v", res, err)
	}
}

// unannotated rewrites an artifact's index without annotations.
func unannotated(t *testing.T, a *oci.Artifact) *oci.Artifact {
	t.Helper()
	rootBytes := a.Manifests[len(a.Manifests)-1].Bytes
	var idx ocispec.Index
	if err := json.Unmarshal(rootBytes, &idx); err != nil || len(idx.Annotations) == 0 {
		t.Fatalf("index %s: %v", rootBytes, err)
	}
	idx.Annotations = nil
	root, err := oci.EncodeIndex(idx)
	if err != nil {
		t.Fatal(err)
	}
	out := *a
	out.Manifests = append(append([]oci.Manifest(nil), a.Manifests[:len(a.Manifests)-1]...), root)
	return &out
}

// Verification comes before the comparison with what the tag holds: a
// tampered zip is reported as such, not as "different content" with a
// hint to --replace; a release that verifies is refused naming both
// digests.
func TestPushProviderVerifiesBeforeComparing(t *testing.T) {
	ctx := context.Background()
	keys := []*pgp.Keyring{mustKeyring(t, "gpg-signer.asc")}
	dir := copyRelease(t, "providers", "hello", "1.0.0")
	repo, _ := orasoci.New(t.TempDir())
	one, _ := release.ReadProvider(ctx, dir, release.Options{Keys: keys, Platforms: []names.Platform{{OS: "linux", Arch: "amd64"}}})
	first, err := one.Push(ctx, repo, oci.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := release.ReadProvider(ctx, dir, release.Options{Keys: keys})
	_, err = all.Push(ctx, repo, oci.PushOptions{})
	if !errors.Is(err, oci.ErrVersionExists) || !strings.Contains(err.Error(), first.Root.Digest.String()) {
		t.Fatalf("other content: %v", err)
	}
	want, _ := all.Artifact(ctx)
	if !strings.Contains(err.Error(), want.Root().Digest.String()) {
		t.Fatalf("the refusal does not name this push's digest %s: %v", want.Root().Digest, err)
	}
	f, _ := os.OpenFile(filepath.Join(dir, "terraform-provider-hello_1.0.0_linux_arm64.zip"), os.O_WRONLY, 0)
	f.WriteAt([]byte("XX"), 100)
	f.Close()
	tampered, _ := release.ReadProvider(ctx, dir, release.Options{Keys: keys})
	_, err = tampered.Push(ctx, repo, oci.PushOptions{})
	if err == nil || !strings.Contains(err.Error(), "linux_arm64.zip: sha256") || strings.Contains(err.Error(), "--replace") {
		t.Fatalf("tampered zip under an existing version: %v", err)
	}
}
