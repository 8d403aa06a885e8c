package oci_test

import (
	"context"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// The index's registry is compared as written: another spelling of a
// host (127.0.0.1 for localhost, another port or none, upper case, a
// trailing dot, IPv6 loopback, index.docker.io for docker.io) is another
// registry, refused before anything is written, and RecordHeld writes
// nothing there: the credentials that push a package are never sent to
// a host the index does not name.
func TestHeldIndexOtherSpellingsAreOtherRegistries(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	_, port, _ := strings.Cut(reg.Host, ":")
	client := recordingClient(t, reg, reg.Host+"/acme/index", nil)
	for _, host := range []string{"127.0.0.1:" + port, "localhost", "localhost:443", "LOCALHOST:" + port, "localhost.:" + port,
		"[::1]:" + port, "localhost:0" + port} {
		ref := oci.Reference{Registry: host, Repository: "acme/p"}
		if _, err := client.Open(ref); err == nil || !strings.Contains(err.Error(), "the index must be on the registry of what is pushed") {
			t.Errorf("%s: %v", host, err)
		}
		client.RecordHeld(ctx, ref)
	}
	hub := recordingClient(t, reg, "docker.io/acme/index", nil)
	if _, err := hub.Open(oci.Reference{Registry: "index.docker.io", Repository: "acme/p"}); err == nil {
		t.Error("index.docker.io beside an index on docker.io")
	}
	// The index lists nothing: no spelling above was recorded in it.
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: "acme/p"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := listHeld(t, client, oci.Reference{Registry: reg.Host, Repository: "acme/index"}); err != nil || len(got) != 0 {
		t.Errorf("the index after other spellings: %v %v", got, err)
	}
	if _, err := oci.Push(ctx, repo, seed.SmallArtifact(t, "p"), oci.Tags{"1.0.0": ""}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := listHeld(t, client, oci.Reference{Registry: reg.Host, Repository: "acme/index"}); err != nil || len(got) != 1 || got[0] != "acme/p" {
		t.Errorf("the index after a push on its registry: %v %v", got, err)
	}
}
