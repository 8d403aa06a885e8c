package oci

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Versions pushed at once into one layout by separate opens (concurrent
// pull-throughs of one provider) are all tagged: with a store per open,
// each wrote index.json from its own tags and the last write dropped the
// others'.
func TestConcurrentWritersOfOneLayoutKeepEveryTag(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "acme", "widgets")
	c, err := NewClient(Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- pushVersion(ctx, c, dir, i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := indexEntries(t, dir)
	for i := range n {
		if _, ok := got[fmt.Sprintf("1.%d.0", i)]; !ok {
			t.Errorf("index.json lost 1.%d.0: %v", i, got)
		}
	}
}

func pushVersion(ctx context.Context, c *Client, dir string, i int) error {
	repo, err := c.Open(Reference{Layout: true, Repository: dir})
	if err != nil {
		return err
	}
	a, err := BuildProvider([]ProviderPackage{zipPkg("linux", "amd64", fmt.Sprint(i))}, nil)
	if err != nil {
		return err
	}
	_, err = Push(ctx, repo, a, Tags{fmt.Sprintf("1.%d.0", i): ""}, PushOptions{})
	return err
}

// A layout being created is, to a reader, not there yet (not found),
// never a broken layout: while one goroutine creates and fills it, every
// read-only open either fails with not-found or sees a whole layout.
func TestLayoutBeingCreatedIsNotFoundNotBroken(t *testing.T) {
	ctx := context.Background()
	c, err := NewClient(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		dir := filepath.Join(t.TempDir(), "acme", fmt.Sprint(round))
		done := make(chan error, 1)
		go func() { done <- pushVersion(ctx, c, dir, round) }()
		for created := false; !created; {
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				created = true
			default:
			}
			ro, err := c.OpenReadOnly(ctx, Reference{Layout: true, Repository: dir})
			if IsNotFound(err) {
				continue
			}
			if err != nil {
				t.Fatalf("round %d: a layout being created read as broken: %v", round, err)
			}
			if _, err := ListTagsPaged(ctx, ro, nil); err != nil {
				t.Fatalf("round %d: listing a layout being created: %v", round, err)
			}
		}
		ro, err := c.OpenReadOnly(ctx, Reference{Layout: true, Repository: dir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ResolveProvider(ctx, ro, names.MustParseVersion(fmt.Sprintf("1.%d.0", round))); err != nil {
			t.Fatal(err)
		}
	}
}

// A directory that holds blobs but no oci-layout file yet is not found.
func TestHalfMadeLayoutIsNotFound(t *testing.T) {
	c, err := NewClient(Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(`{"schemaVersion":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenReadOnly(context.Background(), Reference{Layout: true, Repository: dir}); !IsNotFound(err) {
		t.Fatalf("a layout without oci-layout: %v, want not found", err)
	}
}

// Another process's tags (here: oras-go's own store) are seen by the
// next open, and kept by this process's next tag write.
func TestLayoutTakesInAnotherWritersTags(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, err := NewClient(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pushVersion(ctx, c, dir, 0); err != nil {
		t.Fatal(err)
	}
	if err := pushVersionWithAnotherStore(ctx, dir, 1); err != nil {
		t.Fatal(err)
	}
	ro, err := c.OpenReadOnly(ctx, Reference{Layout: true, Repository: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Resolve(ctx, "1.1.0"); err != nil {
		t.Fatalf("another writer's tag unseen: %v", err)
	}
	if err := pushVersion(ctx, c, dir, 2); err != nil {
		t.Fatal(err)
	}
	got := indexEntries(t, dir)
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		if _, ok := got[v]; !ok {
			t.Errorf("index.json lost %s: %v", v, got)
		}
	}
}

// pushVersionWithAnotherStore pushes as another program would: oras-go's
// store of its own, not the one this process shares.
func pushVersionWithAnotherStore(ctx context.Context, dir string, i int) error {
	other, err := orasoci.New(dir)
	if err != nil {
		return err
	}
	a, err := BuildProvider([]ProviderPackage{zipPkg("linux", "amd64", fmt.Sprint(i))}, nil)
	if err != nil {
		return err
	}
	_, err = Push(ctx, other, a, Tags{fmt.Sprintf("1.%d.0", i): ""}, PushOptions{})
	return err
}
