package oci_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// resolveCounter counts the manifests a reader of the index resolves.
type resolveCounter struct {
	oci.ReadOnlyRepository
	n atomic.Int64
}

func (r *resolveCounter) Resolve(ctx context.Context, ref string) (ocispec.Descriptor, error) {
	r.n.Add(1)
	return r.ReadOnlyRepository.Resolve(ctx, ref)
}

// Someone who may push tags into the index can add hashed-entry tags (H
// and 64 hex digits) that name nothing: each costs the reader a manifest
// request, so a listing of 100,000 of them (MaxTags) would make 100,000
// requests, one after another. Reading hashed entries is bounded
// (oci.MaxHashedHeldEntries): beyond it the listing fails at once,
// having read none of them.
func TestHeldIndexBoundsHashedEntries(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	client := registryClient(t, reg)
	ref := oci.Reference{Registry: reg.Host, Repository: "acme/held-index"}
	index, err := client.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	long := "acme/providers/" + strings.Repeat("b", 120) + "/long"
	if err := oci.WriteHeldEntry(ctx, index, long); err != nil {
		t.Fatal(err)
	}
	desc, body, err := oci.FetchReference(ctx, index, oci.HeldEntryTag(long))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, oci.MaxHashedHeldEntries+1)
	tags := make(chan string)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tag := range tags {
				if _, err := oras.TagBytes(ctx, index, desc.MediaType, body, tag); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range oci.MaxHashedHeldEntries {
		sum := sha256.Sum256([]byte(fmt.Sprint("bogus ", i)))
		tags <- "H" + hex.EncodeToString(sum[:])
	}
	close(tags)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ro, err := client.OpenReadOnly(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	counted := &resolveCounter{ReadOnlyRepository: ro}
	got, err := oci.ListHeldEntries(ctx, counted)
	if err == nil || !strings.Contains(err.Error(), "hashed entries") {
		t.Errorf("an index of %d hashed entries listed %d, %v", oci.MaxHashedHeldEntries+1, len(got), err)
	}
	if n := counted.n.Load(); n != 0 {
		t.Errorf("the listing read %d manifests before failing", n)
	}
}
