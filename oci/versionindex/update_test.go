package versionindex_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
)

// pushed opens repository name at host (a registry or a front) and pushes
// n signed versions into it as push provider does.
func pushed(t *testing.T, reg *testenv.Registry, host, name string, n int) oci.Repository {
	t.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Registry: host, Repository: name})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	if err := seed.Provider(context.Background(), repo, t.TempDir(), seed.Options{Versions: n, Signer: signer, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	return repo
}

// verified is Verify's check of repo, failing the test on error.
func verified(t *testing.T, repo oci.ReadOnlyRepository) versionindex.Check {
	t.Helper()
	c, err := versionindex.Verify(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// entryOf is version v's entry as its tag names it now.
func entryOf(t *testing.T, repo oci.ReadOnlyRepository, v string) versionindex.Entry {
	t.Helper()
	e, ok := versionindex.ReadEntry(context.Background(), repo, names.MustParseVersion(v))
	if !ok {
		t.Fatalf("%s has no summary", v)
	}
	return e
}

// TestPushWritesTheIndex: push provider's path writes an entry per
// version, each naming what its tag names; pushing the same versions
// again writes no index.
func TestPushWritesTheIndex(t *testing.T) {
	reg := testenv.StartRegistry(t)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	repo := pushed(t, reg, front.Host, "providers/acme/x", 3)
	if c := verified(t, repo); !c.Present || c.Entries != 3 || !c.Agrees() {
		t.Fatalf("after three pushes: %+v", c)
	}
	idx, err := versionindex.Read(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	for k, e := range idx.Entries { // what push wrote is what reading the tag gives
		if want := entryOf(t, repo, k); !e.Equal(want) {
			t.Errorf("%s: pushed entry %+v, the tag's index says %+v", k, e, want)
		}
	}
	front.ResetLog()
	pushed(t, reg, front.Host, "providers/acme/x", 3)
	for _, e := range front.Log() {
		if e.Method == "PUT" {
			t.Errorf("a re-push of unchanged versions wrote %s", e.Path)
		}
	}
}

// TestUpdateRepairs: an entry lost to a concurrent writer is added back
// by the next update; an entry whose tag was deleted is dropped; an
// index the registry holds but oci-tofu refuses is rewritten.
func TestUpdateRepairs(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	repo := pushed(t, reg, reg.Host, "providers/acme/x", 4)
	e0, e1, e2 := entryOf(t, repo, seed.Version(0)), entryOf(t, repo, seed.Version(1)), entryOf(t, repo, seed.Version(2))
	// A concurrent writer's index, written last, without versions 1 to 3.
	if _, _, err := versionindex.Write(ctx, repo, map[string]versionindex.Entry{seed.Version(0): e0}); err != nil {
		t.Fatal(err)
	}
	if c := verified(t, repo); c.Agrees() || len(c.Missing) != 3 {
		t.Fatalf("with a lost update: %+v", c)
	}
	up, err := versionindex.Update(ctx, repo, e2)
	if err != nil || !up.Wrote || up.Repaired != 2 {
		t.Fatalf("update: %+v, %v; want versions 1 and 3 repaired", up, err)
	}
	if c := verified(t, repo); !c.Agrees() || c.Entries != 4 {
		t.Fatalf("after the repair: %+v", c)
	}
	deleter, err := testClient(t, reg).OpenDeleter(oci.Reference{Registry: reg.Host, Repository: "providers/acme/x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := deleter.Delete(ctx, e1.Index); err != nil {
		t.Fatal(err)
	}
	up, err = versionindex.Update(ctx, repo, e0)
	if err != nil || !up.Wrote || up.Removed != 1 {
		t.Fatalf("update after a delete: %+v, %v; want version 1's entry removed", up, err)
	}
	if c := verified(t, repo); !c.Agrees() || c.Entries != 3 {
		t.Fatalf("after the delete: %+v", c)
	}
	// Something else under the index's tag: rewritten.
	seed.Push(t, repo, seed.SmallArtifact(t, "not an index"), versionindex.Tag)
	if c := verified(t, repo); c.Refused == "" {
		t.Fatalf("a manifest that is no version index: %+v", c)
	}
	if up, err := versionindex.Update(ctx, repo, e0); err != nil || !up.Wrote {
		t.Fatalf("update over a foreign manifest: %+v, %v", up, err)
	}
	if c := verified(t, repo); !c.Agrees() || c.Entries != 3 {
		t.Fatalf("after rewriting: %+v", c)
	}
}

// TestVerifyReportsAMovedTag: a tag moved by another tool (the index not
// updated) is reported stale; the next update finds it among the entries
// it checks, and reads the version again from its tag.
func TestVerifyReportsAMovedTag(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	repo := pushed(t, reg, reg.Host, "providers/acme/x", 3)
	e0 := entryOf(t, repo, seed.Version(0))
	// Another tool retags version 2 with version 0's index.
	if err := repo.Tag(ctx, e0.Index, seed.Version(2)); err != nil {
		t.Fatal(err)
	}
	c := verified(t, repo)
	if !slices.Equal(c.Stale, []string{seed.Version(2)}) {
		t.Fatalf("after moving a tag: %+v; want %s stale", c, seed.Version(2))
	}
	up, err := versionindex.Update(ctx, repo, e0)
	if err != nil || up.Removed != 1 || up.Repaired != 1 {
		t.Fatalf("update: %+v, %v; want the stale entry removed and read again", up, err)
	}
	if c := verified(t, repo); !c.Agrees() {
		t.Fatalf("after the update: %+v", c)
	}
	if !strings.HasPrefix(versionindex.Tag, "oci-tofu") || versionindex.Tag >= oci.TagSchemaTags || oci.IsVersionTag(versionindex.Tag) {
		t.Fatalf("tag %q", versionindex.Tag)
	}
}

func testClient(t *testing.T, reg *testenv.Registry) *oci.Client {
	t.Helper()
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPushOverAHostileIndex: a push over an index of 10,000 entries for
// versions without tags and lying entries for tagged ones succeeds,
// reads a bounded number of manifests, writes no tag but its version's
// and the index's, deletes nothing, and leaves an index that agrees with
// the tags.
func TestPushOverAHostileIndex(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	repo := pushed(t, reg, front.Host, "providers/acme/x", 3)
	e0 := entryOf(t, repo, seed.Version(0))
	e0.ProvenanceBlobs = nil // 10,000 entries with hints would not fit the 4 MiB bound
	hostile := map[string]versionindex.Entry{}
	for i := range versionindex.MaxEntries - 2 {
		e := e0
		e.Version = names.MustParseVersion(fmt.Sprintf("5.%d.%d", i/100, i%100))
		hostile[e.Version.String()] = e
	}
	for _, v := range []string{seed.Version(1), seed.Version(2)} {
		e := e0 // version 0's index under another version
		e.Version = names.MustParseVersion(v)
		e.Platforms = []names.Platform{{OS: "plan9", Arch: "mips"}}
		hostile[v] = e
	}
	if _, dropped, err := versionindex.Write(ctx, repo, hostile); err != nil || dropped != 0 {
		t.Fatalf("writing the hostile index: %d dropped, %v", dropped, err)
	}
	front.ResetLog()
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	pushedVersion := seed.Version(3)
	if err := seed.PushVersion(ctx, repo, t.TempDir(), pushedVersion, seed.Options{Signer: signer, Platforms: seed.Platforms}, false); err != nil {
		t.Fatalf("push over the hostile index: %v", err)
	}
	reads := 0
	for _, e := range front.Log() {
		switch {
		case e.Method == "DELETE":
			t.Errorf("the push deleted %s", e.Path)
		case e.Method == "PUT" && strings.Contains(e.Path, "/manifests/"):
			ref := e.Path[strings.LastIndex(e.Path, "/")+1:]
			if ref != pushedVersion && ref != versionindex.Tag && !strings.HasPrefix(ref, "sha256:") {
				t.Errorf("the push wrote the tag %s", ref)
			}
		case (e.Method == "GET" || e.Method == "HEAD") && strings.Contains(e.Path, "/manifests/"):
			reads++
		}
	}
	if reads > 2*versionindex.MaxChecks {
		t.Errorf("the push read %d manifests", reads)
	}
	c := verified(t, repo)
	if !c.Agrees() || c.Entries != 4 {
		t.Fatalf("after the push: %+v", c)
	}
	idx, err := versionindex.Read(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	for k, e := range idx.Entries {
		if want := entryOf(t, repo, k); !e.Equal(want) {
			t.Errorf("%s: entry %+v, its tag says %+v", k, e, want)
		}
	}
}

// TestReplaceRewritesTheEntry: push --replace of a version with other
// content sets the entry its tag now names.
func TestReplaceRewritesTheEntry(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	repo := pushed(t, reg, reg.Host, "providers/acme/x", 3)
	before := entryOf(t, repo, seed.Version(1))
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	one := []names.Platform{{OS: "linux", Arch: "amd64"}}
	if err := seed.PushVersion(ctx, repo, t.TempDir(), seed.Version(1), seed.Options{Signer: signer, Platforms: one}, true); err != nil {
		t.Fatal(err)
	}
	after := entryOf(t, repo, seed.Version(1))
	if after.Index.Digest == before.Index.Digest || len(after.Platforms) != 1 {
		t.Fatalf("the replace pushed %+v", after)
	}
	idx, err := versionindex.Read(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if got := idx.Entries[seed.Version(1)]; !got.Equal(after) {
		t.Fatalf("after --replace the index says %+v; the tag %+v", got, after)
	}
	if c := verified(t, repo); !c.Agrees() {
		t.Fatalf("after --replace: %+v", c)
	}
}

// TestVerifyReadsOnlyTaggedEntries: entries of versions the tag list
// lacks are stale by the tag list alone; verify (and lint) read the tags
// of the others only, one request each, not one per entry a hostile index
// lists.
func TestVerifyReadsOnlyTaggedEntries(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	repo := pushed(t, reg, front.Host, "providers/acme/x", 2)
	e0 := entryOf(t, repo, seed.Version(0))
	hostile := map[string]versionindex.Entry{seed.Version(0): e0, seed.Version(1): entryOf(t, repo, seed.Version(1))}
	const ghosts = 2000
	for i := range ghosts {
		e := e0
		e.Version = names.MustParseVersion(fmt.Sprintf("5.%d.%d", i/100, i%100))
		hostile[e.Version.String()] = e
	}
	if _, _, err := versionindex.Write(ctx, repo, hostile); err != nil {
		t.Fatal(err)
	}
	front.ResetLog()
	c := verified(t, repo)
	if len(c.Stale) != ghosts || len(c.Missing) != 0 || c.Entries != ghosts+2 {
		t.Fatalf("verify: %d stale, missing %v, %d entries", len(c.Stale), c.Missing, c.Entries)
	}
	reads := 0
	for _, e := range front.Log() {
		if strings.Contains(e.Path, "/manifests/") {
			reads++
		}
	}
	if reads > 3 { // the index, and the two tagged versions
		t.Errorf("verify read %d manifests for an index of 2 tagged versions", reads)
	}
}

// TestUpdateAtTheSizeBound: in a repository whose versions take the
// index beyond MaxSize (the newest left out, read from their tags), an
// update that changes nothing writes nothing: the versions it would add
// back are the ones the bound leaves out again.
func TestUpdateAtTheSizeBound(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	client := testClient(t, reg)
	repo, err := client.Open(oci.Reference{Registry: front.Host, Repository: "providers/acme/wide"})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	var platforms []names.Platform
	for i := range oci.MaxIndexEntries - 1 { // the most a version may have
		platforms = append(platforms, names.Platform{OS: strings.Repeat("o", 32), Arch: fmt.Sprintf("a%031d", i)}) // the longest words
	}
	if err := seed.PushVersion(ctx, repo, t.TempDir(), seed.Version(0), seed.Options{Signer: signer, Platforms: platforms}, false); err != nil {
		t.Fatal(err)
	}
	e0 := entryOf(t, repo, seed.Version(0))
	// Every other version a tag of the same release, as another tool
	// copies them, and an index of them all (Write leaves out the newest).
	entries := map[string]versionindex.Entry{}
	const versions = 300
	for i := range versions {
		v := seed.Version(i)
		if i > 0 {
			if err := repo.Tag(ctx, e0.Index, v); err != nil {
				t.Fatal(err)
			}
		}
		e := e0
		e.Version = names.MustParseVersion(v)
		entries[v] = e
	}
	_, dropped, err := versionindex.Write(ctx, repo, entries)
	if err != nil || dropped == 0 {
		t.Fatalf("the index of %d versions: %d left out, %v; want some left out", versions, dropped, err)
	}
	for range 2 {
		front.ResetLog()
		up, err := versionindex.Update(ctx, repo, e0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range front.Log() {
			if e.Method == "PUT" {
				t.Errorf("an update changing nothing wrote %s (%+v)", e.Path, up)
			}
		}
	}
}
