package oci_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Entry tags reverse, fit the tag grammar, and hash a path too long for
// a tag.
func TestHeldEntryTag(t *testing.T) {
	if got := oci.HeldEntryTag("acme/providers/hashicorp/aws"); got != "RacmeSprovidersShashicorpSaws" {
		t.Errorf("tag %s", got)
	}
	long := "acme/" + strings.Repeat("a", 130) + "/x"
	if got := oci.HeldEntryTag(long); len(got) != 65 || got[0] != 'H' {
		t.Errorf("a long path's tag %s", got)
	}
}

// Many writers at once (CI jobs pushing different providers) lose no
// entry; writing one again changes nothing; a long path is read back from
// its manifest; an index not yet written holds nothing.
func TestHeldIndexConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	client := registryClient(t, reg)
	ref := oci.Reference{Registry: reg.Host, Repository: "acme/held-index"}
	if got, err := listHeld(t, client, ref); err != nil || len(got) != 0 {
		t.Fatalf("an index not written yet: %v %v", got, err)
	}
	var want []string
	for i := range 40 {
		want = append(want, fmt.Sprintf("acme/providers/ns%d/type-%d", i%7, i))
	}
	long := "acme/providers/" + strings.Repeat("b", 120) + "/long"
	want = append(want, long)
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(want))
	for _, name := range append(slices.Clone(want), want[:5]...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			index, err := client.Open(ref)
			if err == nil {
				err = oci.WriteHeldEntry(ctx, index, name)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := listHeld(t, client, ref)
	slices.Sort(got)
	slices.Sort(want)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("listed %d entries %v, want %d", len(got), err, len(want))
	}
	index, _ := client.Open(ref)
	if err := oci.WriteHeldEntry(ctx, index, "Not/A/Path"); err == nil {
		t.Error("an invalid repository path was written")
	}
}

func listHeld(t *testing.T, client *oci.Client, ref oci.Reference) ([]string, error) {
	t.Helper()
	repo, err := client.OpenReadOnly(context.Background(), ref)
	if err != nil {
		return nil, err
	}
	return oci.ListHeldEntries(context.Background(), repo)
}

// registryClient is a client of the test registry reg.
func registryClient(t *testing.T, reg *testenv.Registry) *oci.Client {
	t.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	return client
}
