package convert

import (
	"context"
	"errors"
	"testing"

	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/oci"
)

func TestPushProviderReleaseUpToDateWithoutRehashing(t *testing.T) {
	ctx := context.Background()
	repo, err := orasoci.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keys := []*Keyring{mustKeyring(t, "gpg-signer.asc")}
	dir := fixture(t, "providers", "hello", "1.0.0")
	rel, err := ReadProviderRelease(dir, ReleaseOptions{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	first, err := PushProviderRelease(ctx, repo, rel, false, oci.PushOptions{})
	if err != nil || first.UpToDate {
		t.Fatalf("%+v %v", first, err)
	}
	again, err := ReadProviderRelease(dir, ReleaseOptions{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	res, err := PushProviderRelease(ctx, repo, again, false, oci.PushOptions{})
	if err != nil || !res.UpToDate || res.Root.Digest != first.Root.Digest {
		t.Fatalf("%+v %v", res, err)
	}
	for _, p := range again.Packages {
		if p.H1 != "" {
			t.Fatal("an up-to-date re-push unpacked the zips")
		}
	}
	// A subset of platforms is different content for the same version:
	// refused unless replacing, then pushed (and hashed).
	sub, _ := ReadProviderRelease(dir, ReleaseOptions{Keys: keys, Platforms: []oci.Platform{{OS: "linux", Arch: "amd64"}}})
	if _, err := PushProviderRelease(ctx, repo, sub, false, oci.PushOptions{}); !errors.Is(err, ErrVersionExists) {
		t.Fatalf("overwrite without replace: %v", err)
	}
	if d, _ := repo.Resolve(ctx, "1.0.0"); d.Digest != first.Root.Digest {
		t.Fatal("refused push moved the tag")
	}
	res, err = PushProviderRelease(ctx, repo, sub, true, oci.PushOptions{})
	if err != nil || res.UpToDate || res.Root.Digest == first.Root.Digest || sub.Packages[0].H1 != tofuH1["linux_amd64"] {
		t.Fatalf("%+v %v", res, err)
	}
}
