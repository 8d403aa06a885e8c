package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

func providerTemplate(t *testing.T, s string) *repotemplate.Template {
	t.Helper()
	tpl, err := repotemplate.ParseProviderTemplate(s)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// An address maps through the first mapping whose filters cover it, with
// patterns read case-insensitively; an address no mapping covers is
// NotFound (the proxy answers 404, not 500).
func TestProviderMappings(t *testing.T) {
	ms, err := store.CheckMappings([]store.ProviderMapping{
		{Template: providerTemplate(t, "registry.example/internal/${namespace}/${type}"), Include: []string{"tofu.example/ACME/*"}, Exclude: []string{"*/*/secret"}, Label: "first"},
		{Template: providerTemplate(t, "registry.example/${hostname}/${namespace}/${type}"), Exclude: []string{"registry.opentofu.org/hashicorp/*"}, Label: "second"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]string{
		"tofu.example/acme/widgets":             "registry.example/internal/acme/widgets",
		"tofu.example/acme/secret":              "registry.example/tofu.example/acme/secret", // excluded by the first, taken by the second
		"registry.opentofu.org/acme/widgets":    "registry.example/registry.opentofu.org/acme/widgets",
		"registry.opentofu.org/hashicorp/aws":   "",
		"registry.opentofu.org/hashicorp/local": "",
	} {
		p, err := names.ParseProvider(addr)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := ms.Map(p)
		if want == "" {
			if got := failure(t, err); got != oci.FailureNotFound {
				t.Errorf("%s: failure %v, want not found", addr, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", addr, err)
		} else if got := ref.String(); got != want {
			t.Errorf("%s maps to %s, want %s", addr, got, want)
		}
	}

	if _, err := store.CheckMappings([]store.ProviderMapping{{Template: nil}}); err == nil {
		t.Error("a mapping without a template was accepted")
	}
	var nilTemplate *repotemplate.Template
	if _, err := store.CheckMappings([]store.ProviderMapping{{Template: nilTemplate}}); err == nil {
		t.Error("a mapping with a nil *repotemplate.Template was accepted")
	}
	if _, err := store.CheckMappings([]store.ProviderMapping{{Template: providerTemplate(t, "r.example/${namespace}/${type}"), Include: []string{"a/[b/c"}}}); err == nil {
		t.Error("an invalid pattern was accepted")
	}
}

// Versions lists tags as OpenTofu's oci_mirror does: "_" stands for "+",
// "1.2" counts as 1.2.0 but cannot be resolved (its canonical tag is
// missing), "v1.3.0" and "latest" are no versions, and tags that look like
// versions but are none are named as refused.
func TestVersionsListsAsTofu(t *testing.T) {
	ctx := context.Background()
	l := newLayout(t)
	a := providerArtifact(t, "1.0.0")
	push(t, l.repo, a, "1.0.0", "1.0.1_build.5", "1.2", "v1.3.0", "latest", "1.0.0.0", "2.0.0-rc1", "1.4", "1.4.0")

	s := newStore(t, store.Options{})
	listing, err := s.Repo(l.ref).Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range listing.Versions {
		got = append(got, v.String())
	}
	if want := []string{"1.0.0", "1.0.1+build.5", "1.2.0", "1.4.0", "2.0.0-rc1"}; !slices.Equal(got, want) {
		t.Errorf("versions %q, want %q (oldest first)", got, want)
	}
	if want := map[string]string{"1.2.0": "1.2"}; fmt.Sprint(listing.Unresolvable) != fmt.Sprint(want) {
		t.Errorf("unresolvable %v, want %v (1.4 has its canonical tag 1.4.0 too)", listing.Unresolvable, want)
	}
	if _, ok := listing.Refused["1.0.0.0"]; !ok || len(listing.Refused) != 1 {
		t.Errorf("refused %v, want only 1.0.0.0", listing.Refused)
	}
	if listing.At.IsZero() {
		t.Error("the listing does not say when the tags were read")
	}

	repo := s.Repo(l.ref)
	// The build-metadata version resolves through its "_" tag.
	if pv, err := repo.ProviderVersion(ctx, version(t, "1.0.1+build.5")); err != nil {
		t.Errorf("1.0.1+build.5: %v", err)
	} else if pv.Version.String() != "1.0.1+build.5" || pv.Index.Digest != a.Root().Digest {
		t.Errorf("1.0.1+build.5 read as %s at %s, want the pushed index %s", pv.Version, pv.Index.Digest, a.Root().Digest)
	}
	// The listed version without its canonical tag fails as tofu fails,
	// and may be left out of a listing.
	_, err = repo.ProviderVersion(ctx, version(t, "1.2.0"))
	if got := failure(t, err); got != oci.FailureNotFound || !store.Skippable(err) || store.RepoMissing(err) {
		t.Errorf("1.2.0 (tag 1.2 only): failure %v, skippable %v, repo missing %v; want a skippable not-found version in an existing repository", got, store.Skippable(err), store.RepoMissing(err))
	}
}

// A provider version reads as its index: every platform, its zips (the
// fixture zips byte for byte), the provenance it was pushed with and the
// summary its index carries.
func TestProviderVersionZipsAndProvenance(t *testing.T) {
	ctx := context.Background()
	l := newLayout(t)
	rel := providerRelease(t, "1.0.0")
	a, err := rel.Artifact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	push(t, l.repo, a, "1.0.0")
	repo := newStore(t, store.Options{}).Repo(l.ref)

	pv, err := repo.ProviderVersion(ctx, version(t, "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	zips, err := repo.Zips(ctx, pv)
	if err != nil {
		t.Fatal(err)
	}
	if len(zips) != len(rel.Packages) || len(pv.Platforms) != len(rel.Packages) {
		t.Fatalf("%d platforms, %d zips; want %d", len(pv.Platforms), len(zips), len(rel.Packages))
	}
	for _, p := range rel.Packages {
		z, ok := zips[p.Platform]
		if !ok {
			t.Errorf("no zip for %s", p.Platform)
			continue
		}
		if z.MediaType != oci.MediaTypeZip || z.Digest.Encoded() != p.SHA256 || z.Size != p.Size {
			t.Errorf("%s: zip %s %s (%d bytes), want archive/zip sha256:%s (%d bytes)", p.Platform, z.MediaType, z.Digest, z.Size, p.SHA256, p.Size)
		}
		// The blob read back is the fixture zip.
		rc, err := repo.Fetch(ctx, z)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		want, err := os.ReadFile(p.Path)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(want) {
			t.Errorf("%s: the fetched zip is not %s", p.Platform, p.Filename)
		}
	}

	prov, err := repo.Provenance(ctx, pv)
	if err != nil || prov == nil {
		t.Fatalf("provenance %v, %v", prov, err)
	}
	if string(prov.Files.SHA256SUMS.Data) != string(rel.Files.SHA256SUMS.Data) || string(prov.Files.Signature.Data) != string(rel.Files.Signature.Data) {
		t.Error("the provenance does not hold the release's SHA256SUMS and signature")
	}
	if !slices.Equal(prov.Meta.SigningKeyIDs, rel.KeyIDs) || !slices.Equal(prov.Meta.Protocols, rel.Protocols) {
		t.Errorf("provenance keys %v protocols %v, want %v %v", prov.Meta.SigningKeyIDs, prov.Meta.Protocols, rel.KeyIDs, rel.Protocols)
	}
	sum, ok, err := repo.Summary(ctx, pv)
	if err != nil || !ok {
		t.Fatalf("summary: ok %v, %v", ok, err)
	}
	if !slices.Equal(sum.SigningKeyIDs, rel.KeyIDs) || !slices.Equal(sum.Protocols, rel.Protocols) || len(sum.Protocols) == 0 {
		t.Errorf("summary %+v, want keys %v protocols %v", sum, rel.KeyIDs, rel.Protocols)
	}
}

// An index assembled by a third-party tool (no provenance) reads as a
// provider version without provenance or summary, not as an error.
func TestProviderVersionWithoutProvenance(t *testing.T) {
	ctx := context.Background()
	l := newLayout(t)
	full := providerArtifact(t, "1.1.0")
	// The same release without its provenance manifest: the platform
	// manifests and an index listing only them.
	var fullIndex ocispec.Index
	if err := json.Unmarshal(full.Manifests[len(full.Manifests)-1].Bytes, &fullIndex); err != nil {
		t.Fatal(err)
	}
	var platforms []ocispec.Descriptor
	for _, d := range fullIndex.Manifests {
		if d.ArtifactType == oci.ArtifactTypeProviderTarget {
			platforms = append(platforms, d)
		}
	}
	a := &oci.Artifact{Blobs: full.Blobs}
	for _, m := range full.Manifests[:len(full.Manifests)-1] {
		if m.Descriptor.ArtifactType == oci.ArtifactTypeProviderTarget {
			a.Manifests = append(a.Manifests, m)
		}
	}
	idx, err := oci.EncodeIndex(ocispec.Index{ArtifactType: oci.ArtifactTypeProvider, Manifests: platforms})
	if err != nil {
		t.Fatal(err)
	}
	a.Manifests = append(a.Manifests, idx)
	push(t, l.repo, a, "1.1.0")

	repo := newStore(t, store.Options{}).Repo(l.ref)
	pv, err := repo.ProviderVersion(ctx, version(t, "1.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.Platforms) != len(platforms) || pv.Provenance != nil || pv.Summary != nil {
		t.Fatalf("read %d platforms, provenance %v, summary %v; want %d, none, none", len(pv.Platforms), pv.Provenance, pv.Summary, len(platforms))
	}
	if prov, err := repo.Provenance(ctx, pv); prov != nil || err != nil {
		t.Errorf("provenance %v, %v; want none", prov, err)
	}
	if _, ok, err := repo.Summary(ctx, pv); ok || err != nil {
		t.Errorf("summary ok %v, %v; want none", ok, err)
	}
}

// ProviderVersionAt reads the exact index a digest names when the
// version's tag names it, or named it when the store read it (within
// TaggedTTL): an archive URL handed out before a re-tag keeps working.
// An index the tag never named (another version's) is NotFound, as is a
// digest the repository lacks.
func TestProviderVersionAtDigest(t *testing.T) {
	ctx := context.Background()
	l := newLayout(t)
	old, newer, other := providerArtifact(t, "1.0.0"), providerArtifact(t, "1.1.0"), providerArtifact(t, "2.0.0-rc1")
	push(t, l.repo, old, "1.0.0")
	push(t, l.repo, other, "2.0.0-rc1")

	repo := newStore(t, store.Options{ResolveTTL: time.Millisecond, MaxStale: -1}).Repo(l.ref)
	v := version(t, "1.0.0")
	if pv, err := repo.ProviderVersion(ctx, v); err != nil || pv.Index.Digest != old.Root().Digest {
		t.Fatalf("tag 1.0.0 read as %v, %v; want %s", pv, err, old.Root().Digest)
	}
	push(t, l.repo, newer, "1.0.0") // re-tagged (push --replace)
	time.Sleep(5 * time.Millisecond)
	pv, err := repo.ProviderVersion(ctx, v)
	if err != nil || pv.Index.Digest != newer.Root().Digest {
		t.Fatalf("tag 1.0.0 read as %v, %v; want the re-tagged index %s", pv, err, newer.Root().Digest)
	}
	at, err := repo.ProviderVersionAt(ctx, v, old.Root().Digest)
	if err != nil {
		t.Fatal(err)
	}
	if at.Index.Digest != old.Root().Digest || at.Version.String() != "1.0.0" {
		t.Errorf("read %s as %s, want the old index %s as 1.0.0", at.Index.Digest, at.Version, old.Root().Digest)
	}
	_, err = repo.ProviderVersionAt(ctx, v, other.Root().Digest)
	if got := failure(t, err); got != oci.FailureNotFound {
		t.Errorf("2.0.0-rc1's index under 1.0.0: failure %v, want not found", got)
	}
	_, err = repo.ProviderVersionAt(ctx, v, digest.FromString("nothing"))
	if got := failure(t, err); got != oci.FailureNotFound {
		t.Errorf("a missing digest: failure %v, want not found", got)
	}
}

// A tag naming something other than a provider index is Invalid, and a
// listing may leave that version out.
func TestProviderVersionRefusesOtherArtifacts(t *testing.T) {
	ctx := context.Background()
	l := newLayout(t)
	push(t, l.repo, moduleArtifact(t, moduleZip(t, "# not a provider\n")), "1.0.0")
	_, err := newStore(t, store.Options{}).Repo(l.ref).ProviderVersion(ctx, version(t, "1.0.0"))
	if got := failure(t, err); got != oci.FailureInvalid || !store.Skippable(err) {
		t.Errorf("a module tagged as a provider version: failure %v, skippable %v; want invalid, skippable", got, store.Skippable(err))
	}
}

// A repository that does not exist is NotFound and says the repository is
// missing (the proxy answers 404 for the provider, not for a version).
func TestMissingRepository(t *testing.T) {
	ctx := context.Background()
	ref := oci.Reference{Layout: true, Repository: t.TempDir() + "/nothing-here"}
	repo := newStore(t, store.Options{}).Repo(ref)
	_, err := repo.Versions(ctx)
	if got := failure(t, err); got != oci.FailureNotFound || !store.RepoMissing(err) {
		t.Errorf("missing layout: failure %v, repo missing %v; want not found, repo missing", got, store.RepoMissing(err))
	}
	var se *store.Error
	if !errors.As(err, &se) || se.Repo == "" || se.What == "" {
		t.Errorf("the error %v does not say which repository and what was being done", err)
	}
}

// Module reads a module package by tag, ModuleAt by manifest digest; both
// give its zip layer. A provider index is not a module package.
func TestModules(t *testing.T) {
	ctx := context.Background()
	l := newLayout(t)
	z := moduleZip(t, "output \"v\" { value = 1 }\n")
	m := moduleArtifact(t, z)
	push(t, l.repo, m, "1.0.0")
	provider := providerArtifact(t, "1.0.0")
	push(t, l.repo, provider, "2.0.0")
	repo := newStore(t, store.Options{}).Repo(l.ref)

	manifest, zipDesc, err := repo.Module(ctx, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if manifest.Digest != m.Root().Digest || zipDesc.Digest != digest.FromBytes(z) || zipDesc.Size != int64(len(z)) || zipDesc.MediaType != oci.MediaTypeZip {
		t.Errorf("module %s with zip %+v; want %s with the pushed zip", manifest.Digest, zipDesc, m.Root().Digest)
	}
	at, err := repo.ModuleAt(ctx, "1.0.0", m.Root().Digest)
	if err != nil || at.Digest != zipDesc.Digest {
		t.Errorf("ModuleAt: %+v, %v; want the zip %s", at, err, zipDesc.Digest)
	}
	// The version is not a label: the package under another version's tag
	// is not found.
	if _, err = repo.ModuleAt(ctx, "2.0.0", m.Root().Digest); failure(t, err) != oci.FailureNotFound {
		t.Errorf("a package by digest under a tag naming something else: %v, want not found", err)
	}

	_, _, err = repo.Module(ctx, "2.0.0")
	if got := failure(t, err); got != oci.FailureInvalid {
		t.Errorf("a provider index read as a module: failure %v, want invalid", got)
	}
	_, err = repo.ModuleAt(ctx, "2.0.0", provider.Root().Digest)
	if got := failure(t, err); got != oci.FailureInvalid {
		t.Errorf("a provider index read as a module by digest: failure %v, want invalid", got)
	}
	_, _, err = repo.Module(ctx, "9.9.9")
	if got := failure(t, err); got != oci.FailureNotFound || store.RepoMissing(err) {
		t.Errorf("a missing tag: failure %v, repo missing %v; want not found in an existing repository", got, store.RepoMissing(err))
	}
}

// StoredTofu reads an OpenTofu release artifact with every file of the
// release under its sha256 and size, and refuses an artifact whose tag
// says another version.
func TestStoredTofu(t *testing.T) {
	ctx := context.Background()
	l := newLayout(t)
	a := tofuArtifact(t, "1.9.0")
	push(t, l.repo, a, "1.9.0", "1.8.0")

	// Each read on its own store: see TestStoredTofuTagCheckSurvivesCache.
	_, err := newStore(t, store.Options{}).Repo(l.ref).StoredTofu(ctx, version(t, "1.8.0"))
	if got := failure(t, err); got != oci.FailureInvalid || !strings.Contains(err.Error(), "1.9.0") {
		t.Errorf("1.9.0 tagged 1.8.0: failure %v (%v), want invalid naming 1.9.0", got, err)
	}

	repo := newStore(t, store.Options{}).Repo(l.ref)
	rel, err := repo.StoredTofu(ctx, version(t, "1.9.0"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(testenv.Testdata(t, "tofu", "1.9.0"))
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != "1.9.0" || len(rel.Names) != len(entries) || len(rel.Files) != len(entries) {
		t.Fatalf("release %s with %d names and %d files; want 1.9.0 with %d", rel.Version, len(rel.Names), len(rel.Files), len(entries))
	}
	for _, e := range entries {
		b, err := os.ReadFile(testenv.Testdata(t, "tofu", "1.9.0", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if d := rel.Files[e.Name()]; d.Digest != digest.FromBytes(b) || d.Size != int64(len(b)) {
			t.Errorf("%s: layer %s (%d bytes), want the file's sha256 and size", e.Name(), d.Digest, d.Size)
		}
	}
}

// The check that a release is the version its tag says must not depend on
// what was read before: one artifact under two version tags must not
// answer both tags with whichever result was cached first (the right
// release, or the refusal for FailureTTL).
func TestStoredTofuTagCheckSurvivesCache(t *testing.T) {
	ctx := context.Background()
	l := newLayout(t)
	push(t, l.repo, tofuArtifact(t, "1.9.0"), "1.9.0", "1.8.0")
	repo := newStore(t, store.Options{}).Repo(l.ref)
	if _, err := repo.StoredTofu(ctx, version(t, "1.8.0")); failure(t, err) != oci.FailureInvalid {
		t.Errorf("1.9.0 tagged 1.8.0: %v, want invalid", err)
	}
	if _, err := repo.StoredTofu(ctx, version(t, "1.9.0")); err != nil {
		t.Errorf("1.9.0 after the refusal of its artifact under 1.8.0: %v", err)
	}
	repo = newStore(t, store.Options{}).Repo(l.ref)
	if _, err := repo.StoredTofu(ctx, version(t, "1.9.0")); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.StoredTofu(ctx, version(t, "1.8.0")); err == nil {
		t.Error("1.9.0 tagged 1.8.0 was served as 1.8.0 once 1.9.0 was cached")
	}
}

// EachVersion fans out at most Concurrency calls at once.
func TestEachVersionBounded(t *testing.T) {
	s := newStore(t, store.Options{Concurrency: 3})
	var vs names.VersionList
	for i := range 30 {
		vs = append(vs, version(t, fmt.Sprintf("1.%d.0", i)))
	}
	var inFlight, peak atomic.Int32
	seen := make([]bool, len(vs))
	var mu sync.Mutex
	err := s.EachVersion(context.Background(), vs, func(ctx context.Context, i int, v names.Version) error {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if v.String() != vs[i].String() {
			return fmt.Errorf("call %d got %s", i, v)
		}
		mu.Lock()
		seen[i] = true
		mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > 3 || p < 2 {
		t.Errorf("at most %d calls ran at once, want up to 3 (and some overlap)", p)
	}
	if slices.Contains(seen, false) {
		t.Error("not every version was visited")
	}
}

// EachVersion stops at the first error: it returns that error, starts
// (almost) nothing after it, and what is still running sees its context
// cancelled. A panic is an error, not the end of the process.
func TestEachVersionStopsAtFirstError(t *testing.T) {
	s := newStore(t, store.Options{Concurrency: 2})
	var vs names.VersionList
	for i := range 100 {
		vs = append(vs, version(t, fmt.Sprintf("1.%d.0", i)))
	}
	fatal := errors.New("fatal")
	var calls, cancelledCalls atomic.Int32
	running := make(chan struct{}) // closed by the first call besides the failing one
	var once sync.Once
	err := s.EachVersion(context.Background(), vs, func(ctx context.Context, i int, v names.Version) error {
		calls.Add(1)
		if i == 0 {
			// Fail only once another call runs, so that one is there to
			// see the cancellation.
			select {
			case <-running:
			case <-time.After(5 * time.Second):
			}
			return fatal
		}
		once.Do(func() { close(running) })
		select {
		case <-ctx.Done():
			cancelledCalls.Add(1)
		case <-time.After(5 * time.Second):
		}
		return nil
	})
	if !errors.Is(err, fatal) {
		t.Fatalf("EachVersion returned %v, want the first error", err)
	}
	// The first call fails at once; the one running beside it and at most
	// one started as a slot freed are all that run.
	if n := calls.Load(); n > 3 {
		t.Errorf("%d of 100 calls ran after the first failed", n)
	}
	if cancelledCalls.Load() == 0 {
		t.Error("no call still running saw its context cancelled")
	}

	err = s.Each(context.Background(), 3, func(ctx context.Context, i int) error {
		if i == 1 {
			panic("boom")
		}
		return nil
	})
	var pe *cache.PanicError
	if !errors.As(err, &pe) {
		t.Errorf("a panicking call returned %v, want a *cache.PanicError", err)
	}
}
