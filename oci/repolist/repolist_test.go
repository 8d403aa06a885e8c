package repolist_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repolist"
)

func catalogReads(e testenv.AccessEntry) bool { return e.Path == "/v2/_catalog" }

func matchCatalog(r *http.Request) bool { return r.URL.Path == "/v2/_catalog" }

// pushRepositories pushes the hello provider into each named repository.
func pushRepositories(t *testing.T, client *oci.Client, host string, repos ...string) {
	t.Helper()
	a := seed.HelloArtifact(t, "1.0.0")
	for _, name := range repos {
		repo, err := client.Open(oci.Reference{Registry: host, Repository: name})
		if err != nil {
			t.Fatal(err)
		}
		seed.Push(t, repo, a, "1.0.0")
	}
}

func listAll(t *testing.T, client *oci.Client, registry, prefix string) ([]string, int, error) {
	t.Helper()
	var all []string
	pages := 0
	err := repolist.List(context.Background(), client, registry, prefix, func(repos []string) error {
		pages++
		all = append(all, repos...)
		return nil
	})
	return all, pages, err
}

// A real Distribution's catalog, read in pages of 2 through a front:
// every repository below the prefix, and none beside it; an ordered
// catalog is not read far past the prefix; more repositories than the
// bound allows is a LimitError, not a shorter list.
func TestListPaged(t *testing.T) {
	reg := testenv.StartRegistry(t)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	client := newCatalogClient(t, reg, 2)
	want := []string{"acme/providers/a/one", "acme/providers/a/two", "acme/providers/b/three", "acme/providers/c/four", "acme/providers/c/x"}
	pushRepositories(t, client, reg.Host, append([]string{"aaa/before", "acme/providers", "acme/providersx/y", "zed/after", "zed/later", "zed/last"}, want...)...)

	got, _, err := listAll(t, client, front.Host, "acme/providers/")
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("listed %v %v, want %v", got, err, want)
	}
	if n := front.Count(catalogReads); n < 5 {
		t.Errorf("%d catalog pages read, want ≥ 5 (pages of 2)", n)
	}

	front.ResetLog()
	repolist.LowerRepositoryBounds(t, repolist.MaxRepositories, repolist.MaxPages, 2)
	got, _, err = listAll(t, client, front.Host, "acme/providers/")
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("listed %v %v, want %v", got, err, want)
	}
	if n := front.Count(catalogReads); n != 5 {
		t.Errorf("%d catalog pages read, want 5: the page after the prefix's last runs 2 past it", n)
	}

	repolist.LowerRepositoryBounds(t, 8, repolist.MaxPages, repolist.MaxRepositories)
	_, _, err = listAll(t, client, front.Host, "")
	var limit *oci.LimitError
	if !errors.As(err, &limit) || !strings.Contains(err.Error(), "more than 8 repositories") {
		t.Errorf("11 repositories, a bound of 8: %v, want a LimitError", err)
	}
	repolist.LowerRepositoryBounds(t, repolist.MaxRepositories, 3, repolist.MaxRepositories)
	if _, _, err = listAll(t, client, front.Host, ""); !errors.As(err, &limit) || !strings.Contains(err.Error(), "more than 3 pages") {
		t.Errorf("6 pages, a bound of 3: %v, want a LimitError", err)
	}
}

func newCatalogClient(t *testing.T, reg *testenv.Registry, pageSize int) *oci.Client {
	t.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, CatalogPageSize: pageSize})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// A registry that does not offer its catalog (GHCR's 403 DENIED, Docker
// Hub's 401, a 404, an UNSUPPORTED error) is ErrCannotList, saying so;
// one that fails (a 500) is not.
func TestListCannotList(t *testing.T) {
	reg := testenv.StartRegistry(t)
	client := newCatalogClient(t, reg, 0)
	pushRepositories(t, client, reg.Host, "acme/x")
	for _, c := range []struct {
		fault testenv.Fault
		want  string
	}{
		{testenv.ErrorAnswer(http.StatusForbidden, "DENIED", "denied"), " does not list repositories (GET /v2/_catalog: 403 DENIED)"},
		{testenv.ErrorAnswer(http.StatusUnauthorized, "UNAUTHORIZED", "authentication required"), "(GET /v2/_catalog: 401 UNAUTHORIZED)"},
		{testenv.ErrorAnswer(http.StatusNotFound, "NOT_FOUND", "no route"), "(GET /v2/_catalog: 404 NOT_FOUND)"},
		{testenv.ErrorAnswer(http.StatusMethodNotAllowed, "UNSUPPORTED", "the operation is unsupported"), "(GET /v2/_catalog: 405 UNSUPPORTED)"},
	} {
		front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Match: matchCatalog, Fault: c.fault}}})
		_, _, err := listAll(t, client, front.Host, "")
		if !errors.Is(err, repolist.ErrCannotList) || !strings.HasPrefix(err.Error(), front.Host+" ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("catalog answering %d: %v, want ErrCannotList %q", c.fault.Status, err, c.want)
		}
	}
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{Match: matchCatalog,
		Fault: testenv.ErrorAnswer(http.StatusInternalServerError, "UNKNOWN", "boom")}}})
	_, _, err := listAll(t, client, front.Host, "")
	if err == nil || errors.Is(err, repolist.ErrCannotList) || oci.Classify(err) != oci.FailureServerError {
		t.Errorf("catalog answering 500: %v (%v), want a server error, not ErrCannotList", err, oci.Classify(err))
	}
}

func makeLayout(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// An OCI layout tree: the layouts below the prefix, named as the template
// writes them; not a directory without oci-layout, not one whose
// oci-layout is a link, not a layout's own subdirectories, and a
// symbolic link only to a layout inside the prefix (one out of it is not
// followed). A missing tree holds nothing.
func TestListLayouts(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "store", "providers")
	makeLayout(t, filepath.Join(root, "acme", "x"))
	makeLayout(t, filepath.Join(root, "acme", "x", "blobs", "nested")) // inside a layout: not read
	makeLayout(t, filepath.Join(root, "beta", "y"))
	if err := os.MkdirAll(filepath.Join(root, "acme", "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	makeLayout(t, filepath.Join(base, "outside", "evil"))
	if err := os.MkdirAll(filepath.Join(root, "acme", "linked"), 0o755); err != nil {
		t.Fatal(err)
	}
	must(t, os.Symlink(filepath.Join(base, "outside", "evil", "oci-layout"), filepath.Join(root, "acme", "linked", "oci-layout")))
	must(t, os.Symlink(filepath.Join(base, "outside", "evil"), filepath.Join(root, "acme", "evil")))
	must(t, os.Symlink(filepath.Join(base, "outside"), filepath.Join(root, "outside")))
	must(t, os.Symlink(filepath.Join(root, "acme", "x"), filepath.Join(root, "beta", "alias")))
	makeLayout(t, filepath.Join(base, "store", "modules", "m", "n"))

	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prefix := filepath.ToSlash(root) + "/"
	got, _, err := listAll(t, client, oci.LayoutPrefix, prefix)
	want := []string{prefix + "acme/x", prefix + "beta/alias", prefix + "beta/y"}
	slices.Sort(got)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("listed %v %v, want %v", got, err, want)
	}
	got, _, err = listAll(t, client, oci.LayoutPrefix, filepath.ToSlash(root)+"/be")
	if err != nil || !slices.Equal(got, []string{prefix + "beta/y"}) { // beta/alias leads out of …/be
		t.Errorf("prefix …/be: %v %v", got, err)
	}
	got, _, err = listAll(t, client, oci.LayoutPrefix, filepath.ToSlash(base)+"/nothing/here/")
	if err != nil || len(got) != 0 {
		t.Errorf("a missing tree: %v %v, want nothing", got, err)
	}
	repolist.LowerRepositoryBounds(t, 2, repolist.MaxPages, repolist.MaxRepositories)
	var limit *oci.LimitError
	if _, _, err := listAll(t, client, oci.LayoutPrefix, prefix); !errors.As(err, &limit) {
		t.Errorf("3 layouts, a bound of 2: %v, want a LimitError", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
