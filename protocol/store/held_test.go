package store_test

import (
	"context"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

func catalogReads(e testenv.AccessEntry) bool { return e.Path == "/v2/_catalog" }

// firstCatalogPages are the catalog reads that begin a listing.
func firstCatalogPages(e testenv.AccessEntry) bool {
	return e.Path == "/v2/_catalog" && !strings.Contains(e.Query, "last=")
}

func matchCatalog(r *http.Request) bool { return r.URL.Path == "/v2/_catalog" }

// heldSetup is a real Distribution holding providers at
// acme/providers/a/one, acme/providers/b/two (no tags), and repositories
// the template does not map beside them, read through a front by a client
// that asks for catalog pages of 2.
func heldSetup(t *testing.T) (*registrySetup, *oci.Client) {
	t.Helper()
	rs := startRegistry(t) // acme/hello
	for _, name := range []string{"acme/providers/a/one", "acme/providers/b/two", "acme/providers/x", "acme/providers/a/one/more", "zed/z"} {
		repo, err := rs.client.Open(oci.Reference{Registry: rs.reg.Host, Repository: name})
		if err != nil {
			t.Fatal(err)
		}
		var tags []string // b/two holds no tags: its artifact pushed by digest
		if name != "acme/providers/b/two" {
			tags = []string{"1.0.0"}
		}
		push(t, repo, providerArtifact(t, "1.0.0"), tags...)
	}
	return rs, newClient(t, oci.Options{CAFile: rs.reg.CA.CertFile, CatalogPageSize: 2})
}

// Held lists, from a cold start, every repository the template maps in
// the registry's catalog (read in pages), with the names each stands
// for, sorted, and nothing the template does not map; within TagTTL the
// listing is read once, and concurrent callers share one.
func TestHeldListsTheCatalog(t *testing.T) {
	ctx := context.Background()
	rs, client := heldSetup(t)
	front := testenv.StartFrontFor(t, rs.reg, testenv.FrontOptions{})
	tpl := providerTemplate(t, front.Host+"/acme/providers/${namespace}/${type}")
	s := newStore(t, store.Options{Client: client, TagTTL: time.Minute})

	var wg sync.WaitGroup
	results := make([]store.Held, 16)
	errs := make([]error, 16)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i], errs[i] = s.Held(ctx, tpl) }()
	}
	wg.Wait()
	want := []map[string]string{{"namespace": "a", "type": "one"}, {"namespace": "b", "type": "two"}}
	for i, h := range results {
		if errs[i] != nil || !h.CanList || h.Reason != "" || h.At.IsZero() || !sameValues(h.Values, want) || len(h.Repositories) != 2 ||
			h.Repositories[0] != (oci.Reference{Registry: front.Host, Repository: "acme/providers/a/one"}) ||
			h.Repositories[1] != (oci.Reference{Registry: front.Host, Repository: "acme/providers/b/two"}) {
			t.Fatalf("caller %d: %+v %v, want %v", i, h, errs[i], want)
		}
	}
	if n := front.Count(firstCatalogPages); n != 1 {
		t.Errorf("%d listings for 16 concurrent callers, want 1", n)
	}
	if n := front.Count(catalogReads); n < 3 {
		t.Errorf("%d catalog pages, want ≥ 3 (6 repositories in pages of 2)", n)
	}
	if _, err := s.Held(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	if n := front.Count(firstCatalogPages); n != 1 {
		t.Errorf("%d listings within TagTTL, want 1", n)
	}

	short := newStore(t, store.Options{Client: client, TagTTL: time.Millisecond, MaxStale: -1})
	front.ResetLog()
	for range 2 {
		if _, err := short.Held(ctx, tpl); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := front.Count(firstCatalogPages); n != 2 {
		t.Errorf("%d listings past a 1ms TagTTL, want 2", n)
	}
}

func sameValues(got, want []map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !maps.Equal(got[i], want[i]) {
			return false
		}
	}
	return true
}

// A registry that does not list (GHCR's 403, Docker Hub's 401, a 404, an
// UNSUPPORTED error) is a Held without CanList saying why, not an error;
// one that fails (500) is an error classified as other reads are.
func TestHeldCannotList(t *testing.T) {
	ctx := context.Background()
	rs, client := heldSetup(t)
	for _, c := range []struct {
		fault testenv.Fault
		want  string
	}{
		{testenv.ErrorAnswer(http.StatusForbidden, "DENIED", "denied"), "does not list repositories (GET /v2/_catalog: 403 DENIED)"},
		{testenv.ErrorAnswer(http.StatusUnauthorized, "UNAUTHORIZED", "authentication required"), "does not list repositories (GET /v2/_catalog: 401 UNAUTHORIZED)"},
		{testenv.ErrorAnswer(http.StatusNotFound, "NOT_FOUND", "not found"), "does not list repositories (GET /v2/_catalog: 404 NOT_FOUND)"},
		{testenv.ErrorAnswer(http.StatusMethodNotAllowed, "UNSUPPORTED", "unsupported"), "does not list repositories (GET /v2/_catalog: 405 UNSUPPORTED)"},
	} {
		front := testenv.StartFrontFor(t, rs.reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Match: matchCatalog, Fault: c.fault}}})
		s := newStore(t, store.Options{Client: client})
		h, err := s.Held(ctx, providerTemplate(t, front.Host+"/acme/providers/${namespace}/${type}"))
		if err != nil || h.CanList || h.Reason != front.Host+" "+c.want || len(h.Repositories) != 0 {
			t.Errorf("catalog answering %d: %+v %v, want CanList false, reason %q", c.fault.Status, h, err, c.want)
		}
	}
	front := testenv.StartFrontFor(t, rs.reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Match: matchCatalog,
		Fault: testenv.ErrorAnswer(http.StatusInternalServerError, "UNKNOWN", "boom")}}})
	s := newStore(t, store.Options{Client: client})
	_, err := s.Held(ctx, providerTemplate(t, front.Host+"/acme/providers/${namespace}/${type}"))
	if got := failure(t, err); got != oci.FailureServerError {
		t.Errorf("catalog answering 500: %v (%v), want a server error", err, got)
	}
	h, err := s.Held(ctx, providerTemplate(t, "${hostname}/acme/${namespace}/${type}"))
	if err != nil || h.CanList || !strings.Contains(h.Reason, "placeholder in its registry host") {
		t.Errorf("a template whose host is a placeholder: %+v %v", h, err)
	}
}

// An OCI layout template is listed from its directories: the layouts
// below the fixed prefix that the template matches.
func TestHeldLayouts(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"acme/x", "beta/y", "beta/y/z", "flat"} {
		l := filepath.Join(dir, p)
		if err := os.MkdirAll(l, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(l, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := newStore(t, store.Options{})
	tpl := providerTemplate(t, "oci-layout:"+filepath.ToSlash(dir)+"/${namespace}/${type}")
	h, err := s.Held(context.Background(), tpl)
	want := []map[string]string{{"namespace": "acme", "type": "x"}, {"namespace": "beta", "type": "y"}}
	if err != nil || !h.CanList || !sameValues(h.Values, want) || len(h.Repositories) != 2 ||
		h.Repositories[0] != (oci.Reference{Layout: true, Repository: filepath.ToSlash(dir) + "/acme/x"}) {
		t.Errorf("%+v %v, want %v", h, err, want)
	}
}

// Where the catalog does not list (GHCR), the held-address index lists
// what push, mirror and pull-through recorded in it, and the listing is
// not complete (what was pushed unrecorded is missing); where it lists, a
// repository the catalog finds and the index lacks is added to it
// (RepairHeldIndex), and the index repository itself is no provider.
func TestHeldIndex(t *testing.T) {
	ctx := context.Background()
	rs, client := heldSetup(t)
	denying := testenv.StartFrontFor(t, rs.reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Match: matchCatalog,
		Fault: testenv.ErrorAnswer(http.StatusForbidden, "DENIED", "denied")}}})
	index := oci.Reference{Registry: denying.Host, Repository: "acme/providers/held/index"}
	writer, err := client.Open(index)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"acme/providers/b/two", "acme/providers/c/three", "elsewhere/x/y"} {
		if err := oci.WriteHeldEntry(ctx, writer, name); err != nil {
			t.Fatal(err)
		}
	}
	tpl := providerTemplate(t, denying.Host+"/acme/providers/${namespace}/${type}")
	h, err := newStore(t, store.Options{Client: client, HeldIndex: index}).Held(ctx, tpl)
	want := []map[string]string{{"namespace": "b", "type": "two"}, {"namespace": "c", "type": "three"}}
	wantReason := "listed from the held-address index " + index.Name() + ", as " + denying.Host +
		" does not list repositories (GET /v2/_catalog: 403 DENIED); repositories pushed without --catalog-repository are not shown"
	if err != nil || h.CanList || !h.Indexed || h.Reason != wantReason || !sameValues(h.Values, want) {
		t.Errorf("a registry that does not list, with an index: %+v %v, want %v, not complete: %q", h, err, want, wantReason)
	}

	plain := testenv.StartFrontFor(t, rs.reg, testenv.FrontOptions{})
	index.Registry = plain.Host
	tpl = providerTemplate(t, plain.Host+"/acme/providers/${namespace}/${type}")
	h, err = newStore(t, store.Options{Client: client, HeldIndex: index, RepairHeldIndex: true}).Held(ctx, tpl)
	want = []map[string]string{{"namespace": "a", "type": "one"}, {"namespace": "b", "type": "two"}, {"namespace": "c", "type": "three"}}
	if err != nil || !h.CanList || !h.Indexed || !sameValues(h.Values, want) {
		t.Errorf("catalog and index: %+v %v, want %v", h, err, want)
	}
	repo, err := client.OpenReadOnly(ctx, index)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := oci.ListHeldEntries(ctx, repo)
	if err != nil || !slices.Contains(entries, "acme/providers/a/one") || len(entries) != 4 {
		t.Errorf("the index after a repairing listing: %v %v, want a/one added", entries, err)
	}
}

// A repairing listing that cannot write the index (a proxy without push
// rights on it) tries once a listing, not once a repository it lacks,
// and still lists.
func TestHeldIndexRepairStopsAtTheFirstFailure(t *testing.T) {
	ctx := context.Background()
	rs, client := heldSetup(t)
	indexWrites := func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/v2/acme/held/index/")
	}
	front := testenv.StartFrontFor(t, rs.reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Match: indexWrites,
		Fault: testenv.ErrorAnswer(http.StatusForbidden, "DENIED", "denied")}}})
	index := oci.Reference{Registry: front.Host, Repository: "acme/held/index"}
	tpl := providerTemplate(t, front.Host+"/acme/providers/${namespace}/${type}")
	h, err := newStore(t, store.Options{Client: client, HeldIndex: index, RepairHeldIndex: true}).Held(ctx, tpl)
	if err != nil || !h.CanList || len(h.Repositories) != 2 {
		t.Fatalf("%+v %v, want the catalog's 2 repositories", h, err)
	}
	puts := front.Count(func(e testenv.AccessEntry) bool {
		return e.Method == http.MethodPut && strings.HasPrefix(e.Path, "/v2/acme/held/index/manifests/")
	})
	if puts != 1 {
		t.Errorf("%d index writes for 2 missing entries, the first refused: want 1", puts)
	}
}
