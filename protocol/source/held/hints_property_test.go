package held_test

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"oras.land/oras-go/v2"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// TestIndexDifferential: random interleavings of pushes, pushes with
// --replace, deletes and copies of single tags by another tool (oras-go's
// Copy of one tag, which does not carry the index) against Distribution;
// after each step a cold store's registry-protocol listing and mirror
// listing equal what reading every tag gives. A tag another tool moved
// over a version the index lists (or a tag deleted and made again by it
// while the index keeps the old entry) is the one case the cheap checks cannot
// see (the tag list names no digests): the listing is right once the
// proxy has resolved that version (as tofu's install does), or once an
// oci-tofu push has checked the entry.
func TestIndexDifferential(t *testing.T) {
	ctx := context.Background()
	seedValue := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seedValue)
	rng := rand.New(rand.NewPCG(seedValue, 44))
	ix := newIndexed(t, 1)
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	// Another repository, where the other tool copies releases from.
	other, err := ix.client.Open(oci.Reference{Registry: ix.reg.Host, Repository: "elsewhere/acme/big"})
	if err != nil {
		t.Fatal(err)
	}
	platformSets := [][]names.Platform{
		{{OS: "linux", Arch: "amd64"}},
		{{OS: "darwin", Arch: "arm64"}, {OS: "linux", Arch: "amd64"}},
		{{OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm64"}, {OS: "windows", Arch: "amd64"}},
	}
	pool := []string{"1.0.0", "1.0.1", "1.1.0", "2.0.0", "2.1.0", "3.0.0"}
	for i, v := range pool { // the other repository's releases
		opts := seed.Options{Signer: signer, Platforms: platformSets[(i+1)%len(platformSets)]}
		if err := seed.PushVersion(ctx, other, t.TempDir(), v, opts, false); err != nil {
			t.Fatal(err)
		}
	}
	tagged := func() []string {
		vs, err := oci.ListVersions(ctx, ix.repo)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range vs {
			out = append(out, v.String())
		}
		return out
	}
	moved := map[string]bool{} // tags another tool moved since the last push
	const steps = 30
	for step := range steps {
		have := tagged()
		v := pool[rng.IntN(len(pool))]
		var what string
		switch op := rng.IntN(4); {
		case op == 0 || len(have) == 0: // push a new version, or --replace one
			replace := slices.Contains(have, v)
			what = map[bool]string{false: "push ", true: "push --replace "}[replace] + v
			opts := seed.Options{Signer: signer, Platforms: platformSets[rng.IntN(len(platformSets))]}
			if err := seed.PushVersion(ctx, ix.repo, t.TempDir(), v, opts, replace); err != nil {
				t.Fatalf("step %d, %s: %v", step, what, err)
			}
			clear(moved)
		case op == 1: // delete a version
			v = have[rng.IntN(len(have))]
			what = "delete " + v
			desc, err := ix.repo.Resolve(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			deleter, err := ix.client.OpenDeleter(oci.Reference{Registry: ix.reg.Host, Repository: "providers/acme/big"})
			if err != nil {
				t.Fatal(err)
			}
			if err := deleter.Delete(ctx, desc); err != nil {
				t.Fatalf("step %d, %s: %v", step, what, err)
			}
		default: // another tool copies one tag in, over a version or as a new one
			what = "oras copy " + v
			if _, err := oras.Copy(ctx, other, v, ix.repo, v, oras.DefaultCopyOptions); err != nil {
				t.Fatalf("step %d, %s: %v", step, what, err)
			}
			moved[v] = true // over the version, or over an entry a delete left in the index
		}
		want := ix.everyTag(t)
		g, h := ix.source(t)
		for mv := range moved {
			if _, ok := want[mv]; ok {
				if _, err := h.ResolveProvider(ctx, ix.p, names.MustParseVersion(mv), names.ViaRegistry); err != nil {
					t.Fatal(err)
				}
			}
		}
		mirror, err := h.ProviderVersions(ctx, ix.p, names.ViaMirror, source.ListOptions{})
		if len(want) == 0 {
			if !source.Absent(err) {
				t.Fatalf("step %d, after %s: no version tagged, the mirror listing says %v, %v", step, what, mirror.Versions, err)
			}
			t.Logf("step %d: %s: no versions", step, what)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var mirrored []string
		for _, e := range mirror.Versions {
			mirrored = append(mirrored, e.Version.String())
		}
		if tags := slices.Sorted(maps.Keys(want)); !slices.Equal(mirrored, tags) {
			t.Fatalf("step %d, after %s: the mirror lists %v, the tags %v", step, what, mirrored, tags)
		}
		got, fromIndex := listed(t, g, ix.p)
		if !maps.Equal(got, want) {
			t.Fatalf("step %d, after %s: the listing says\n%v\nreading every tag says\n%v", step, what, got, want)
		}
		t.Logf("step %d: %s: %d versions, %d from the index", step, what, len(want), fromIndex)
	}
}
