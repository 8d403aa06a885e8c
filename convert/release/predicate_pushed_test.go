package release_test

import (
	"context"
	"io"
	"reflect"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
)

// countingRepo counts what is fetched from a repository.
type countingRepo struct {
	oci.Repository
	fetches int
}

func (c *countingRepo) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	c.fetches++
	return c.Repository.Fetch(ctx, d)
}

// The predicate of a release Push just built takes its h1 hashes from the
// build, reading nothing back; it is the predicate read back from the
// registry (what a release the registry already held gets), field for
// field.
func TestPredicateOfPushedReleaseReadsNothingBack(t *testing.T) {
	ctx := context.Background()
	store, err := orasoci.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := &countingRepo{Repository: store}
	keys := []*pgp.Keyring{mustKeyring(t, "gpg-signer.asc")}
	dir := fixture(t, "providers", "hello", "1.0.0")
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	rel, err := release.ReadProvider(ctx, dir, release.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	res, err := rel.Push(ctx, repo, oci.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	repo.fetches = 0
	built, err := rel.Predicate(ctx, repo, res.Root, nil, at, "test")
	if err != nil || repo.fetches != 0 {
		t.Fatalf("predicate of the pushed release: %d fetches, %v", repo.fetches, err)
	}
	if built.Platforms["linux_amd64"].H1 != tofuH1["linux_amd64"] {
		t.Errorf("h1 %+v, want tofu's %s", built.Platforms["linux_amd64"], tofuH1["linux_amd64"])
	}

	held, err := release.ReadProvider(ctx, dir, release.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if res2, err := held.Push(ctx, repo, oci.PushOptions{}); err != nil || !res2.UpToDate {
		t.Fatalf("re-push: %+v %v", res2, err)
	}
	readBack, err := held.Predicate(ctx, repo, res.Root, nil, at, "test")
	if err != nil || repo.fetches == 0 {
		t.Fatalf("predicate of a release the registry held: %d fetches, %v", repo.fetches, err)
	}
	if !reflect.DeepEqual(built, readBack) {
		t.Errorf("built predicate %+v differs from the one read back %+v", built, readBack)
	}
}
