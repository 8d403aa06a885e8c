package oci_test

import (
	"context"
	"errors"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// CanRead confirms only what the registry lists to the credentials: a
// repository they may read; not one it says does not exist (registries
// answer 404 for what a credential may not see), nor one outside their
// grants; and it tells credentials the registry refused (a wrong
// password, on a token registry and on a basic-auth one) from a
// repository they may not read.
func TestCanReadConfirmsOnlyAListing(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartTokenRegistry(t, "proxy", "proxy-Pa55")
	reg.Token.AddUser("alice", "alice-Pa55", "team-a/")
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, Username: reg.Username, Password: reg.Password})
	if err != nil {
		t.Fatal(err)
	}
	ref := func(name string) oci.Reference { return oci.Reference{Registry: reg.Host, Repository: name} }
	for _, name := range []string{"team-a/held", "team-b/held"} {
		repo, err := client.Open(ref(name))
		if err != nil {
			t.Fatal(err)
		}
		seed.Push(t, repo, seed.HelloArtifact(t, "1.0.0"), "1.0.0")
	}
	if err := client.CanRead(ctx, ref("team-a/held"), "alice", "alice-Pa55"); err != nil {
		t.Errorf("alice's own repository: %v", err)
	}
	for _, c := range []struct {
		name, password string
		refused        bool
	}{
		{"team-a/absent", "alice-Pa55", false},
		{"team-b/held", "alice-Pa55", false},
		{"team-a/held", "wrong", true},
	} {
		err := client.CanRead(ctx, ref(c.name), "alice", c.password)
		if err == nil || errors.Is(err, oci.ErrCredentialsRefused) != c.refused {
			t.Errorf("%s with %q: %v, want an error (credentials refused: %v)", c.name, c.password, err, c.refused)
		}
	}

	basic := testenv.StartRegistryWithAuth(t, "carol", "carol-Pa55")
	bref := oci.Reference{Registry: basic.Host, Repository: "any"}
	bclient, _ := oci.NewClient(oci.Options{CAFile: basic.CA.CertFile})
	if err := bclient.CanRead(ctx, bref, "carol", "wrong"); !errors.Is(err, oci.ErrCredentialsRefused) {
		t.Errorf("a wrong password on a basic-auth registry: %v", err)
	}
	if err := bclient.CanRead(ctx, bref, "carol", "carol-Pa55"); err == nil || errors.Is(err, oci.ErrCredentialsRefused) {
		t.Errorf("an absent repository with the right password: %v, want not found", err)
	}
}
