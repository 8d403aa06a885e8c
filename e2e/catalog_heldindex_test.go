package e2e

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// The held-address index end to end, on a registry that refuses to list
// (its front answers /v2/_catalog 404, as GHCR and Docker Hub refuse):
// modules pushed with --catalog-repository by 8 concurrent processes,
// twice (the second time up to date), and one pushed without it and
// then again, unchanged, with it, are listed by a freshly started `serve
// --catalog-repository`; one pushed without it is not, and the catalogue
// says it is not complete. A push whose index write is refused still
// succeeds, with a warning; an index on another registry is refused
// before anything is pushed, by push and by serve.
func TestCatalogHeldIndexEndToEnd(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{
		{Match: func(r *http.Request) bool { return r.URL.Path == "/v2/_catalog" }, Fault: testenv.ErrorAnswer(http.StatusNotFound, "NOT_FOUND", "not found")},
		{Match: func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v2/denied/index/") }, Fault: testenv.ErrorAnswer(http.StatusForbidden, "DENIED", "denied")},
	}})
	index := front.Host + "/oci-tofu/catalog"
	dir := writeGreeter(t, "1.0.0")
	module := func(name string) string { return front.Host + "/modules/team/" + name + "/generic:1.0.0" }
	const writers = 8
	for round := range 2 {
		outs, errs := make([]string, writers), make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i], errs[i] = run(t, "push", "module", dir, module(fmt.Sprintf("m%d", i)), "--catalog-repository", index)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil || strings.Contains(outs[i], "WARN") {
				t.Fatalf("round %d, push %d: %v\n%s", round, i, err, outs[i])
			}
		}
	}
	mustRun(t, "push", "module", dir, module("unlisted"))
	mustRun(t, "push", "module", dir, module("late"))
	if out := mustRun(t, "push", "module", dir, module("late"), "--catalog-repository", index); !strings.Contains(out, "unchanged") {
		t.Errorf("the second push of late was not up to date:\n%s", out)
	}

	out := mustRun(t, "push", "module", dir, module("warned"), "--catalog-repository", front.Host+"/denied/index")
	if !strings.Contains(out, "WARN the held-address index does not record this publish") || !strings.Contains(out, "repository="+front.Host+"/modules/team/warned/generic") {
		t.Errorf("a push whose index write is refused: no warning\n%s", out)
	}
	const elsewhere = "the index must be on the registry of what is pushed"
	if out, err := run(t, "push", "module", dir, module("refused"), "--catalog-repository", reg.Host+"/oci-tofu/catalog"); err == nil || !strings.Contains(out, elsewhere) {
		t.Errorf("an index on another registry: %v\n%s", err, out)
	}
	tpl := front.Host + "/modules/${namespace}/${name}/${system}"
	if out, err := run(t, "serve", "--insecure-no-tls", "--listen", "127.0.0.1:0", "--module-template", tpl, "--catalog-repository", reg.Host+"/oci-tofu/catalog"); err == nil || !strings.Contains(out, "the index must be on the registry of what is served") {
		t.Errorf("serve with an index on another registry: %v\n%s", err, out)
	}

	s := startServe(t, "--module-template", tpl, "--catalog-repository", index)
	host := moduleHost(s)
	var idx struct {
		catalogIndex
		Complete bool `json:"complete"`
		Coverage []struct {
			Listed bool   `json:"listed"`
			Reason string `json:"reason"`
		} `json:"coverage"`
	}
	catalogGet(t, s, "https://"+host+"/", "catalog/?format=json", &idx)
	var listed, want []string
	for _, m := range idx.Modules {
		listed = append(listed, m.Address)
	}
	want = append(want, host+"/team/late/generic")
	for i := range writers {
		want = append(want, fmt.Sprintf("%s/team/m%d/generic", host, i))
	}
	if !reflect.DeepEqual(listed, want) {
		t.Errorf("the catalogue lists %q, want %q", listed, want)
	}
	if idx.Complete || len(idx.Coverage) != 1 || idx.Coverage[0].Listed ||
		!strings.Contains(idx.Coverage[0].Reason, "listed from the held-address index "+index) ||
		!strings.Contains(idx.Coverage[0].Reason, "repositories pushed without --catalog-repository are not shown") {
		t.Errorf("complete %v, coverage %+v: want not complete, the index named", idx.Complete, idx.Coverage)
	}
}
