package release_test

import (
	"context"
	"fmt"
	"os"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Verify a provider release directory against the publisher's key and
// push it into an OCI layout; the second push finds it up to date.
func ExampleProvider_Push() {
	ctx := context.Background()
	key, err := pgp.LoadKeyring("../../testdata/keys/gpg-signer.asc")
	if err != nil {
		panic(err)
	}
	rel, err := release.ReadProvider(ctx, "../../testdata/providers/hello/1.0.0", release.Options{Keys: []*pgp.Keyring{key}})
	if err != nil {
		panic(err)
	}
	dir, _ := os.MkdirTemp("", "example-layout-")
	defer os.RemoveAll(dir)
	client, _ := oci.NewClient(oci.Options{})
	repo, err := client.Open(oci.Reference{Layout: true, Repository: dir})
	if err != nil {
		panic(err)
	}
	first, err := rel.Push(ctx, repo, oci.PushOptions{})
	if err != nil {
		panic(err)
	}
	again, _ := rel.Push(ctx, repo, oci.PushOptions{})
	fmt.Println(rel.Type, rel.Version, len(rel.Packages), "platforms, signed by", rel.KeyIDs[0])
	fmt.Println("first push up to date:", first.UpToDate, "; again:", again.UpToDate, again.Root.Digest == first.Root.Digest)
	// Output:
	// hello 1.0.0 4 platforms, signed by 2948153B1A2B92CE
	// first push up to date: false ; again: true true
}
