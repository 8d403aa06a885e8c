package held_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
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

// indexed is a registry holding versions of providers/acme/big pushed as
// push provider pushes them (with the version index), a client for it and
// the repository.
type indexed struct {
	reg    *testenv.Registry
	client *oci.Client
	repo   oci.Repository
	p      names.Provider
}

func newIndexed(t *testing.T, versions int) *indexed {
	t.Helper()
	reg := testenv.StartRegistry(t)
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: "providers/acme/big"})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	platforms := []names.Platform{{OS: "darwin", Arch: "arm64"}, {OS: "linux", Arch: "amd64"}, {OS: "windows", Arch: "amd64"}}
	if err := seed.Provider(context.Background(), repo, t.TempDir(), seed.Options{Versions: versions, Signer: signer, Platforms: platforms, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	return &indexed{reg: reg, client: client, repo: repo, p: names.Provider{Hostname: "example.com", Namespace: "acme", Type: "big"}}
}

// source is a fresh (cold) store's gated held source of the registry.
func (ix *indexed) source(t *testing.T) (*gate.Providers, *held.Providers) {
	t.Helper()
	tpl, err := repotemplate.ParseProviderTemplate(ix.reg.Host + "/providers/${namespace}/${type}")
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(store.Options{Client: ix.client})
	h := &held.Providers{Store: st, Mappings: store.ProviderMappings{{Template: tpl, Label: "test"}}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return &gate.Providers{Inner: h, Judge: gate.Open{}, Each: st.EachVersion}, h
}

// listed is what a registry-protocol listing says of each version:
// platforms, protocols, signing keys; and how many came from the index.
func listed(t *testing.T, g *gate.Providers, p names.Provider) (map[string]string, int) {
	t.Helper()
	l, err := g.ProviderVersions(context.Background(), p, names.ViaRegistry, source.ListOptions{Need: source.NeedSummary})
	if err != nil {
		t.Fatal(err)
	}
	out, fromIndex := map[string]string{}, 0
	for _, e := range l.Versions {
		rel := l.Releases[e.Version.String()]
		if rel == nil {
			out[e.Version.String()] = fmt.Sprint("left out: ", l.Left[e.Version.String()])
			continue
		}
		if rel.FromIndex {
			fromIndex++
		}
		out[e.Version.String()] = fmt.Sprint(rel.Platforms, rel.Protocols, rel.SigningKeyIDs, rel.Summarized)
	}
	return out, fromIndex
}

// everyTag is the listing read from every version's tag, no index used.
func (ix *indexed) everyTag(t *testing.T) map[string]string {
	t.Helper()
	vs, err := oci.ListVersions(context.Background(), ix.repo)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, v := range vs {
		desc, body, err := oci.FetchReference(context.Background(), ix.repo, names.TagForVersion(v))
		if err != nil {
			t.Fatal(err)
		}
		pv, err := oci.ParseProviderIndex(desc, body)
		if err != nil {
			out[v.String()] = "left out"
			continue
		}
		ps := pv.SortedPlatforms()
		out[v.String()] = fmt.Sprint(ps, pv.Summary.Protocols, pv.Summary.SigningKeyIDs, true)
	}
	return out
}

// entries are the honest index's entries.
func (ix *indexed) entries(t *testing.T) map[string]versionindex.Entry {
	t.Helper()
	idx, err := versionindex.Read(context.Background(), ix.repo)
	if err != nil || idx == nil {
		t.Fatalf("the pushes wrote no index: %v", err)
	}
	return idx.Entries
}

// TestListingFromTheIndex: a cold listing takes every version from the
// index, and says what reading every tag says.
func TestListingFromTheIndex(t *testing.T) {
	ix := newIndexed(t, 5)
	g, _ := ix.source(t)
	got, fromIndex := listed(t, g, ix.p)
	if want := ix.everyTag(t); !maps.Equal(got, want) {
		t.Fatalf("listing %v\nwant %v", got, want)
	}
	if fromIndex != 5 {
		t.Errorf("%d versions listed from the index, want 5", fromIndex)
	}
}

// TestHostileIndex: an index that lies about the tags never changes what
// a listing says (against reading every tag), nor what resolving a
// version serves: entries for versions with no tag are not listed, an
// entry whose version the store has resolved to another index or other
// platforms makes the whole index unused, and an index that does not
// parse (duplicates, beyond its bounds) is not used.
func TestHostileIndex(t *testing.T) {
	ctx := context.Background()
	ix := newIndexed(t, 4)
	want := ix.everyTag(t)
	honest := ix.entries(t)
	v0, v1 := seed.Version(0), seed.Version(1)
	write := func(t *testing.T, entries map[string]versionindex.Entry) {
		t.Helper()
		if _, _, err := versionindex.Write(ctx, ix.repo, entries); err != nil {
			t.Fatal(err)
		}
	}
	check := func(t *testing.T, g *gate.Providers, wantFromIndex int) {
		t.Helper()
		got, fromIndex := listed(t, g, ix.p)
		if !maps.Equal(got, want) {
			t.Errorf("listing %v\nwant %v", got, want)
		}
		if fromIndex != wantFromIndex {
			t.Errorf("%d versions listed from the index, want %d", fromIndex, wantFromIndex)
		}
	}
	t.Run("versions that do not exist", func(t *testing.T) {
		e := maps.Clone(honest)
		ghost := honest[v0]
		ghost.Version = names.MustParseVersion("9.9.9")
		e["9.9.9"] = ghost
		write(t, e)
		g, _ := ix.source(t)
		check(t, g, 4)
	})
	t.Run("wrong digest, the version resolved", func(t *testing.T) {
		e := maps.Clone(honest)
		wrong := e[v1]
		wrong.Index = honest[v0].Index // another version's index, which exists
		e[v1] = wrong
		write(t, e)
		g, h := ix.source(t)
		root, err := h.ResolveProvider(ctx, ix.p, names.MustParseVersion(v1), names.ViaRegistry)
		if err != nil || root.Root.Digest != honest[v1].Index.Digest {
			t.Fatalf("resolving %s: %+v, %v; want the index its tag names", v1, root, err)
		}
		check(t, g, 0)
	})
	t.Run("wrong digest, served from the tag", func(t *testing.T) {
		e := maps.Clone(honest)
		wrong := e[v1]
		wrong.Index = honest[v0].Index // the registry refuses an index naming what it does not hold
		e[v1] = wrong
		write(t, e)
		g, h := ix.source(t)
		listed(t, g, ix.p) // the index's word, for the listing only
		root, err := h.ResolveProvider(ctx, ix.p, names.MustParseVersion(v1), names.ViaRegistry)
		if err != nil || root.Root.Digest != honest[v1].Index.Digest {
			t.Fatalf("resolving %s after the listing: %+v, %v; want the index its tag names", v1, root, err)
		}
		rel, err := g.ReadProvider(ctx, root, source.NeedPackages)
		if err != nil || len(rel.Packages) != 3 {
			t.Fatalf("reading %s: %+v, %v", v1, rel, err)
		}
		check(t, g, 0) // found lying once: not used again
	})
	t.Run("platforms missing, the version resolved", func(t *testing.T) {
		e := maps.Clone(honest)
		short := e[v0]
		short.Platforms = short.Platforms[:1]
		e[v0] = short
		write(t, e)
		g, h := ix.source(t)
		if _, err := h.ResolveProvider(ctx, ix.p, names.MustParseVersion(v0), names.ViaRegistry); err != nil {
			t.Fatal(err)
		}
		check(t, g, 0)
	})
	for name, body := range map[string][]byte{
		"duplicate entries":   duplicated(t, honest),
		"no artifact type":    []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`),
		"an unknown field":    []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","artifactType":"` + versionindex.ArtifactType + `","manifests":[],"x":1}`),
		"wrong artifact type": []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","artifactType":"application/vnd.opentofu.provider","manifests":[]}`),
	} {
		t.Run(name, func(t *testing.T) {
			desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(body), Size: int64(len(body))}
			if err := ix.repo.Push(ctx, desc, strings.NewReader(string(body))); err != nil {
				t.Fatal(err)
			}
			if err := ix.repo.Tag(ctx, desc, versionindex.Tag); err != nil {
				t.Fatal(err)
			}
			g, _ := ix.source(t)
			check(t, g, 0)
		})
	}
	t.Run("honest again", func(t *testing.T) {
		write(t, honest)
		g, _ := ix.source(t)
		check(t, g, 4)
	})
}

// duplicated is the honest index's manifest with its first entry twice.
func duplicated(t *testing.T, entries map[string]versionindex.Entry) []byte {
	t.Helper()
	m, _, err := versionindex.Encode(entries)
	if err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(m.Bytes, &idx); err != nil {
		t.Fatal(err)
	}
	idx.Manifests = append(idx.Manifests, idx.Manifests[0])
	b, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHostileIndexLogsLittle: an index refused for a megabyte-long field
// is logged in a short line, and listed as without an index.
func TestHostileIndexLogsLittle(t *testing.T) {
	ctx := context.Background()
	ix := newIndexed(t, 2)
	want := ix.everyTag(t)
	var idx ocispec.Index
	m, _, err := versionindex.Encode(ix.entries(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(m.Bytes, &idx); err != nil {
		t.Fatal(err)
	}
	idx.Manifests[0].Annotations[versionindex.AnnotationVersion] = strings.Repeat("9", 1<<20)
	body, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(body), Size: int64(len(body))}
	if err := ix.repo.Push(ctx, desc, strings.NewReader(string(body))); err != nil {
		t.Fatal(err)
	}
	if err := ix.repo.Tag(ctx, desc, versionindex.Tag); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	tpl, err := repotemplate.ParseProviderTemplate(ix.reg.Host + "/providers/${namespace}/${type}")
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(store.Options{Client: ix.client, Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))})
	h := &held.Providers{Store: st, Mappings: store.ProviderMappings{{Template: tpl, Label: "test"}}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	got, fromIndex := listed(t, &gate.Providers{Inner: h, Judge: gate.Open{}, Each: st.EachVersion}, ix.p)
	if !maps.Equal(got, want) || fromIndex != 0 {
		t.Errorf("listing %v (%d from the index)\nwant %v", got, fromIndex, want)
	}
	out := log.String()
	if !strings.Contains(out, "the version index is not used") {
		t.Fatalf("no warning of the refused index: %.300s", out)
	}
	if len(out) > 2048 {
		t.Errorf("the log is %d bytes: %.300s…", len(out), out)
	}
}

// syncWriter serialises writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// denying is a policy denying one version and one platform.
type denying struct {
	gate.Open
	version  string
	platform names.Platform
}

func (d denying) deny(v names.Version) error {
	if v.String() == d.version {
		return &source.Denied{Msg: "denied", Reason: "denied by the test"}
	}
	return nil
}

func (d denying) Versions(_ names.Kind, _, _ string, vs []names.Version) gate.Verdicts {
	out := gate.Verdicts{Denied: map[string]error{}}
	for _, v := range vs {
		if err := d.deny(v); err != nil {
			out.Denied[v.String()] = err
		}
	}
	return out
}

func (d denying) Version(_ names.Kind, _, _ string, v names.Version) error { return d.deny(v) }

func (d denying) Platform(_ names.Provider, _ names.Version, pl names.Platform) error {
	if pl == d.platform {
		return &source.Denied{Msg: "denied", Reason: "platform denied by the test"}
	}
	return nil
}

// TestIndexUnderAPolicy: a listing taken from the index leaves out the
// versions and platforms the policy denies, as one read from the tags.
func TestIndexUnderAPolicy(t *testing.T) {
	ix := newIndexed(t, 3)
	_, h := ix.source(t)
	st := h.Store
	windows := names.Platform{OS: "windows", Arch: "amd64"}
	g := &gate.Providers{Inner: h, Judge: denying{version: seed.Version(1), platform: windows}, Each: st.EachVersion}
	l, err := g.ProviderVersions(context.Background(), ix.p, names.ViaRegistry, source.ListOptions{Need: source.NeedSummary})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Releases[seed.Version(1)]; ok || l.Left[seed.Version(1)] == nil {
		t.Errorf("the denied version: release %+v, left out %v", l.Releases[seed.Version(1)], l.Left[seed.Version(1)])
	}
	fromIndex := 0
	for _, v := range []string{seed.Version(0), seed.Version(2)} {
		rel := l.Releases[v]
		if rel == nil {
			t.Fatalf("%s not listed: %v", v, l.Left[v])
		}
		if rel.FromIndex {
			fromIndex++
		}
		if len(rel.Platforms) != 2 || slices.Contains(rel.Platforms, windows) {
			t.Errorf("%s lists %v", v, rel.Platforms)
		}
	}
	if fromIndex != 2 {
		t.Errorf("%d versions from the index, want 2", fromIndex)
	}
}

// TestStaleEntryAfterCraneCopy: crane copies another release of a
// version over its tag (the index keeps the old entry). A cold listing
// still says the old entry's platforms (the documented blind spot), but
// what is resolved and downloaded is the tag's content, and once the
// version is resolved the index is no longer used.
func TestStaleEntryAfterCraneCopy(t *testing.T) {
	ctx := context.Background()
	ix := newIndexed(t, 2)
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := ix.client.Open(oci.Reference{Registry: ix.reg.Host, Repository: "elsewhere/acme/big"})
	if err != nil {
		t.Fatal(err)
	}
	v1 := seed.Version(1)
	linux := names.Platform{OS: "linux", Arch: "amd64"}
	if err := seed.PushVersion(ctx, other, t.TempDir(), v1, seed.Options{Signer: signer, Platforms: []names.Platform{linux}}, false); err != nil {
		t.Fatal(err)
	}
	stale := ix.entries(t)[v1]
	home := t.TempDir()
	env := append(os.Environ(), "SSL_CERT_FILE="+testenv.NewCA(t).CertFile, "DOCKER_CONFIG="+testenv.WriteDockerConfig(t, home+"/.docker"), "HOME="+home)
	testenv.MustRun(t, "", env, testenv.Tool(t, "crane"), "copy", ix.reg.Host+"/elsewhere/acme/big:"+v1, ix.reg.Host+"/providers/acme/big:"+v1)
	copied, err := ix.repo.Resolve(ctx, v1)
	if err != nil || copied.Digest == stale.Index.Digest {
		t.Fatalf("the copy: %v, %v", copied.Digest, err)
	}
	g, h := ix.source(t)
	got, _ := listed(t, g, ix.p)
	if want := fmt.Sprint(stale.Platforms, stale.Summary.Protocols, stale.Summary.SigningKeyIDs, true); got[v1] != want {
		t.Errorf("cold listing of %s: %s, want the stale entry's %s", v1, got[v1], want)
	}
	root, err := g.ResolveProvider(ctx, ix.p, names.MustParseVersion(v1), names.ViaRegistry)
	if err != nil || root.Root.Digest != copied.Digest {
		t.Fatalf("resolving %s: %+v, %v; want the copied index %s", v1, root, err, copied.Digest)
	}
	rel, err := g.ReadProvider(ctx, root, source.NeedPackages)
	if err != nil || len(rel.Packages) != 1 || rel.Packages[linux] == nil {
		t.Fatalf("reading %s: %+v, %v; want the copy's one package", v1, rel, err)
	}
	if _, err := h.OpenProviderPackage(ctx, root, names.Platform{OS: "windows", Arch: "amd64"}); err == nil {
		t.Errorf("the stale entry's windows package is served")
	}
	if got, fromIndex := listed(t, g, ix.p); fromIndex != 0 || got[v1] != fmt.Sprint([]names.Platform{linux}, []string{"5.0"}, rel.SigningKeyIDs, true) {
		t.Errorf("listing once resolved: %s (%d from the index)", got[v1], fromIndex)
	}
}

// TestEntryOfAVersionFoundBroken: another tool moves a version's tag onto
// a manifest that is no provider index (the index keeps the old entry).
// Once the proxy has resolved the version and found it broken, a listing
// no longer takes that version from the index, as after any resolution
// (docs/artifacts.md, "What it cannot see").
func TestEntryOfAVersionFoundBroken(t *testing.T) {
	ctx := context.Background()
	ix := newIndexed(t, 2)
	v1 := seed.Version(1)
	seed.Push(t, ix.repo, seed.SmallArtifact(t, "no provider"), v1)
	g, h := ix.source(t)
	if _, err := h.ResolveProvider(ctx, ix.p, names.MustParseVersion(v1), names.ViaRegistry); err == nil {
		t.Fatalf("%s resolved, though its tag names an image manifest", v1)
	}
	got, fromIndex := listed(t, g, ix.p)
	want := ix.everyTag(t)
	if !strings.HasPrefix(got[v1], "left out") || got[seed.Version(0)] != want[seed.Version(0)] || fromIndex != 0 {
		t.Errorf("listing after resolving %s: %v (%d from the index)\nwant %v", v1, got, fromIndex, want)
	}
}
