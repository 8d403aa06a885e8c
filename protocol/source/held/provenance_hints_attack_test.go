package held_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
	"github.com/oci-tofu/oci-tofu/protocol/source/held"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// readingRoots is an open policy whose rules read every stored root
// (as min_age or signers do): a listing then resolves each version.
type readingRoots struct{ gate.Open }

func (readingRoots) ReadsRoot(names.Kind, string, bool) bool { return true }

// viaFront is a fresh (cold) store's held source of the registry behind
// front, gated by judge.
func (ix *indexed) viaFront(t *testing.T, front *testenv.Front, judge gate.Judge) (*gate.Providers, *held.Providers) {
	t.Helper()
	tpl, err := repotemplate.ParseProviderTemplate(front.Host + "/providers/${namespace}/${type}")
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(store.Options{Client: ix.client})
	h := &held.Providers{Store: st, Mappings: store.ProviderMappings{{Template: tpl, Label: "test"}}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return &gate.Providers{Inner: h, Judge: judge, Each: st.EachVersion}, h
}

// matchIndexTag matches the reads of the version index's tag.
func matchIndexTag(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, "/manifests/"+versionindex.Tag)
}

// matchBlob matches the reads of the blob with digest d.
func matchBlob(d digest.Digest) func(*http.Request) bool {
	return func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/blobs/"+d.String()) }
}

// TestColdListingReadsTheIndexOnce: a cold listing under a policy that
// reads every root resolves each version cold, and each resolution reads
// the version index beside its tag; the index is read (and parsed) once
// for the whole listing, and a missing one is asked for once too.
func TestColdListingReadsTheIndexOnce(t *testing.T) {
	const versions = 6
	ix := newIndexed(t, versions)
	for name, faults := range map[string][]testenv.FaultRule{
		"index held":    nil,
		"index missing": {{Match: matchIndexTag, Fault: testenv.ErrorAnswer(http.StatusNotFound, "MANIFEST_UNKNOWN", "manifest unknown")}},
	} {
		t.Run(name, func(t *testing.T) {
			front := testenv.StartFrontFor(t, ix.reg, testenv.FrontOptions{Faults: faults})
			g, _ := ix.viaFront(t, front, readingRoots{})
			l, err := g.ProviderVersions(context.Background(), ix.p, names.ViaRegistry, source.ListOptions{Need: source.NeedSummary})
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Releases) != versions {
				t.Fatalf("listed %d releases, want %d (left %v)", len(l.Releases), versions, l.Left)
			}
			if n := front.Count(func(e testenv.AccessEntry) bool { return strings.HasSuffix(e.Path, "/manifests/"+versionindex.Tag) }); n != 1 {
				t.Errorf("the version index's tag was read %d times in one cold listing of %d versions, want once", n, versions)
			}
		})
	}
}

// TestSlowIndexDelaysNoResolution: a version index whose read hangs does
// not hold up a cold version's resolution (the index is a hint of speed
// only): the tag's answer is given about when the tag is read, not when
// the index read ends; the same store then answers as it would with no
// index.
func TestSlowIndexDelaysNoResolution(t *testing.T) {
	ix := newIndexed(t, 2)
	want := ix.served(t, seed.Version(1))
	const hang = 5 * time.Second
	front := testenv.StartFrontFor(t, ix.reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Match: matchIndexTag, Fault: testenv.Fault{Hang: hang}}}})
	g, h := ix.viaFront(t, front, gate.Open{})
	ctx := context.Background()
	start := time.Now()
	root, err := h.ResolveProvider(ctx, ix.p, names.MustParseVersion(seed.Version(1)), names.ViaMirror)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > hang/2 {
		t.Errorf("a cold resolution took %v while the version index's read hung for %v", took.Round(time.Millisecond), hang)
	}
	rel, err := g.ReadProvider(ctx, root, source.NeedPackages|source.NeedChecksums)
	if err != nil || rel.Checksums == nil {
		t.Fatalf("reading %s: %v %+v", seed.Version(1), err, rel)
	}
	if got := describe(rel); got != want {
		t.Errorf("with the index hanging, served\n%s\nwant\n%s", got, want)
	}
}

// TestUnusedHintHangingDelaysNothing: a hinted blob the provenance
// manifest does not name, whose fetch hangs, does not hold up the read:
// it is cancelled once the manifest's own blobs are read, and the cancel
// ends it promptly. A hinted blob whose bytes the registry corrupts is
// not served: the read fetches it again, or fails; it never serves other
// bytes.
func TestUnusedHintHangingDelaysNothing(t *testing.T) {
	ix := newIndexed(t, 2)
	honest := ix.entries(t)
	v0, v1 := seed.Version(0), seed.Version(1)
	want := ix.served(t, v1)
	withHints := func(t *testing.T, hints []ocispec.Descriptor) {
		t.Helper()
		e := map[string]versionindex.Entry{v0: honest[v0], v1: honest[v1]}
		entry := e[v1]
		entry.ProvenanceBlobs = sortedHints(hints)
		e[v1] = entry
		if _, _, err := versionindex.Write(context.Background(), ix.repo, e); err != nil {
			t.Fatal(err)
		}
	}
	other := honest[v0].ProvenanceBlobs[0] // held, of another version: not named by v1's manifest
	withHints(t, append([]ocispec.Descriptor{other}, honest[v1].ProvenanceBlobs...))
	const hang = 5 * time.Second

	t.Run("hanging unused hint", func(t *testing.T) {
		front := testenv.StartFrontFor(t, ix.reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Match: matchBlob(other.Digest), Fault: testenv.Fault{Hang: hang}}}})
		g, h := ix.viaFront(t, front, gate.Open{})
		start := time.Now()
		if got := servedBy(t, g, h, ix.p, v1); got != want {
			t.Fatalf("served\n%s\nwant\n%s", got, want)
		}
		if took := time.Since(start); took > hang/2 {
			t.Errorf("serving %s took %v while an unused hint's fetch hung for %v", v1, took.Round(time.Millisecond), hang)
		}
		// The front logs a request when it ends: the hung one ends when
		// the client leaves, well before the hang would.
		hung := func(e testenv.AccessEntry) bool {
			return strings.HasSuffix(e.Path, "/blobs/"+other.Digest.String()) && e.Action == "hung"
		}
		for deadline := time.Now().Add(hang / 2); front.Count(hung) == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if n := front.Count(hung); n != 1 {
			t.Errorf("the unused hint's fetch was left %d times by %v, want once: %v", n, time.Since(start).Round(time.Millisecond), front.Log())
		}
	})
	t.Run("corrupted hinted blob", func(t *testing.T) {
		for _, hint := range honest[v1].ProvenanceBlobs {
			front := testenv.StartFrontFor(t, ix.reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Match: matchBlob(hint.Digest), First: 1, Fault: testenv.Fault{FlipByte: true}}}})
			g, h := ix.viaFront(t, front, gate.Open{})
			if got := servedBy(t, g, h, ix.p, v1); got != want {
				t.Fatalf("with the first fetch of %s corrupted, served\n%s\nwant\n%s", hint.Digest, got, want)
			}
		}
	})
}

// servedBy is what g serves of version v's packages and checksums,
// resolved by h as a <version>.json is.
func servedBy(t *testing.T, g *gate.Providers, h *held.Providers, p names.Provider, v string) string {
	t.Helper()
	ctx := context.Background()
	root, err := h.ResolveProvider(ctx, p, names.MustParseVersion(v), names.ViaMirror)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := g.ReadProvider(ctx, root, source.NeedPackages|source.NeedChecksums)
	if err != nil {
		t.Fatalf("reading %s: %v", v, err)
	}
	if rel.Checksums == nil {
		t.Fatalf("%s served without the publisher's checksums (%v)", v, rel.ChecksumsErr)
	}
	return describe(rel)
}

// TestStaleEntryHintsUnused: an entry that names another index than the
// version's tag resolves to (the tag moved by another tool after the
// index was written) gives no hints: none of its hinted blobs is fetched
// while the version is served, and what is served is the tag's.
func TestStaleEntryHintsUnused(t *testing.T) {
	ix := newIndexed(t, 2)
	honest := ix.entries(t)
	v0, v1 := seed.Version(0), seed.Version(1)
	want := ix.served(t, v1)
	stale := honest[v1]
	stale.Index = honest[v0].Index // what the tag named before it moved
	stale.ProvenanceBlobs = honest[v0].ProvenanceBlobs
	if _, _, err := versionindex.Write(context.Background(), ix.repo, map[string]versionindex.Entry{v0: honest[v0], v1: stale}); err != nil {
		t.Fatal(err)
	}
	front := testenv.StartFrontFor(t, ix.reg, testenv.FrontOptions{})
	g, h := ix.viaFront(t, front, gate.Open{})
	if got := servedBy(t, g, h, ix.p, v1); got != want {
		t.Fatalf("served\n%s\nwant\n%s", got, want)
	}
	if n := front.Count(func(e testenv.AccessEntry) bool { return strings.HasSuffix(e.Path, "/manifests/"+versionindex.Tag) }); n != 1 {
		t.Fatalf("the index was read %d times, want once (else this test shows nothing)", n)
	}
	own := map[digest.Digest]bool{}
	for _, b := range honest[v1].ProvenanceBlobs {
		own[b.Digest] = true // the signing keys are both versions'
	}
	checked := 0
	for _, b := range honest[v0].ProvenanceBlobs {
		if own[b.Digest] {
			continue
		}
		checked++
		if n := front.Count(func(e testenv.AccessEntry) bool { return strings.HasSuffix(e.Path, "/blobs/"+b.Digest.String()) }); n != 0 {
			t.Errorf("serving %s fetched %s, a hint of a stale entry, %d times", v1, b.Digest, n)
		}
	}
	if checked == 0 {
		t.Fatal("the two versions' provenances share every blob: this test shows nothing")
	}
}

// TestSlowIndexOneReadAside: concurrent cold resolutions of a repository
// whose version index hangs leave one read of it going on in the
// background, not one goroutine each, and the index's tag is asked for
// once.
func TestSlowIndexOneReadAside(t *testing.T) {
	ix := newIndexed(t, 1)
	const hang = 5 * time.Second
	front := testenv.StartFrontFor(t, ix.reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Match: matchIndexTag, Fault: testenv.Fault{Hang: hang}}}})
	_, h := ix.viaFront(t, front, gate.Open{})
	// A first resolution of another version opens the repository (its
	// connection's goroutines are then counted in the baseline).
	if _, err := h.ResolveProvider(context.Background(), ix.p, names.MustParseVersion("9.9.9"), names.ViaMirror); err == nil {
		t.Fatal("resolved a version not held")
	}
	before := runtime.NumGoroutine()
	const callers = 64
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = h.ResolveProvider(context.Background(), ix.p, names.MustParseVersion(seed.Version(0)), names.ViaMirror)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if grown := runtime.NumGoroutine() - before; grown > callers/4 {
		t.Errorf("%d cold resolutions left %d goroutines more running while the index hangs, want a few", callers, grown)
	}
	if n := front.Count(func(e testenv.AccessEntry) bool { return strings.HasSuffix(e.Path, "/manifests/"+versionindex.Tag) }); n > 1 {
		t.Errorf("the index's tag was asked for %d times, want once", n)
	}
}

// TestUnkeptIndexNotReadAgain: a version index larger than the store's
// resolve cache keeps (a small CacheBytes, a provider of thousands of
// versions) is read aside of cold resolutions once, not again for each
// version of a cold listing (each read would evict the tags resolved
// before it and be evicted by the next).
func TestUnkeptIndexNotReadAgain(t *testing.T) {
	const versions = 6
	ix := newIndexed(t, versions)
	entries := ix.entries(t)
	var real []versionindex.Entry
	for _, e := range entries {
		real = append(real, e)
	}
	for i := range 400 { // entries of versions not tagged: a listing ignores them
		e := real[i%len(real)]
		e.Version = names.MustParseVersion(fmt.Sprintf("0.0.%d", i))
		entries[e.Version.String()] = e
	}
	m, _, err := versionindex.Write(context.Background(), ix.repo, entries)
	if err != nil {
		t.Fatal(err)
	}
	// The resolve cache's share (39%) holds a little less than the
	// index's cost (twice its JSON), and every version's tag.
	cacheBytes := int64(len(m.Bytes)) * 2 * 100 / 39 * 9 / 10
	front := testenv.StartFrontFor(t, ix.reg, testenv.FrontOptions{})
	tpl, err := repotemplate.ParseProviderTemplate(front.Host + "/providers/${namespace}/${type}")
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(store.Options{Client: ix.client, CacheBytes: cacheBytes, Concurrency: 1})
	h := &held.Providers{Store: st, Mappings: store.ProviderMappings{{Template: tpl, Label: "test"}}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	g := &gate.Providers{Inner: h, Judge: readingRoots{}, Each: st.EachVersion}
	l, err := g.ProviderVersions(context.Background(), ix.p, names.ViaRegistry, source.ListOptions{Need: source.NeedSummary})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Releases) != versions {
		t.Fatalf("listed %d releases, want %d (left %v)", len(l.Releases), versions, l.Left)
	}
	if n := front.Count(func(e testenv.AccessEntry) bool { return strings.HasSuffix(e.Path, "/manifests/"+versionindex.Tag) }); n != 1 {
		t.Errorf("an index of %d bytes the cache cannot keep was read %d times in one cold listing of %d versions, want once", len(m.Bytes), n, versions)
	}
}

// TestHintOfAnotherRepository: a hint naming a blob the registry holds
// in another repository only is fetched from the version's own
// repository (the registry does not serve it there: blobs are per
// repository) and changes nothing served.
func TestHintOfAnotherRepository(t *testing.T) {
	ctx := context.Background()
	ix := newIndexed(t, 1)
	v := seed.Version(0)
	want := ix.served(t, v)
	other, err := ix.client.Open(oci.Reference{Registry: ix.reg.Host, Repository: "providers/acme/other"})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("a blob of another repository")
	foreign := ocispec.Descriptor{MediaType: "application/octet-stream", Digest: digest.FromBytes(data), Size: int64(len(data))}
	if err := other.Push(ctx, foreign, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	entries := ix.entries(t)
	e := entries[v]
	e.ProvenanceBlobs = sortedHints(append([]ocispec.Descriptor{{Digest: foreign.Digest, Size: foreign.Size}}, e.ProvenanceBlobs...))
	entries[v] = e
	if _, _, err := versionindex.Write(ctx, ix.repo, entries); err != nil {
		t.Fatal(err)
	}
	front := testenv.StartFrontFor(t, ix.reg, testenv.FrontOptions{})
	g, h := ix.viaFront(t, front, gate.Open{})
	if got := servedBy(t, g, h, ix.p, v); got != want {
		t.Fatalf("served\n%s\nwant\n%s", got, want)
	}
	var asked []testenv.AccessEntry
	for deadline := time.Now().Add(2 * time.Second); len(asked) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		asked = nil
		for _, e := range front.Log() {
			if strings.HasSuffix(e.Path, "/blobs/"+foreign.Digest.String()) {
				asked = append(asked, e)
			}
		}
	}
	if len(asked) != 1 || !strings.Contains(asked[0].Path, "/providers/acme/big/") || asked[0].Status != http.StatusNotFound {
		t.Errorf("the foreign hint was asked for as %v, want once, of providers/acme/big, answered 404", asked)
	}
}
