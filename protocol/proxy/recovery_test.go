package proxy

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
)

// A panic is a bug some input met: the request that met it fails (500),
// the panic is logged once with its stack, and the server goes on — for a
// panic in the handler, in a background fetch of the document cache, and
// in one branch of a fan-out.
func TestRecoveryBoundaries(t *testing.T) {
	dir, _ := layoutStore(t)
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})
	p.Mount("", "/boom/", "boom", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var s []string
		_ = s[len(r.URL.Path)] // out of range: a runtime panic, as a bug would make
	}))
	p.Mount("", "/doc/", "doc", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.out.ServeDoc(w, r, "doc", func(context.Context) (any, time.Time, error) { panic("in a fetch") })
	}))

	p.wantError(t, "/boom/x", http.StatusInternalServerError, "internal error")
	if n := strings.Count(p.logs.String(), "panic serving a request"); n != 1 || !strings.Contains(p.logs.String(), "goroutine ") {
		t.Errorf("handler panic logged %d times (with its stack?):\n%s", n, p.logs)
	}
	for i := 0; i < 3; i++ {
		p.wantError(t, "/doc/x", http.StatusInternalServerError, "internal error")
	}
	if n := strings.Count(p.logs.String(), "panic in a background task"); n != 1 || !strings.Contains(p.logs.String(), "in a fetch") {
		t.Errorf("fetch panic logged %d times, want once:\n%s", n, p.logs)
	}
	p.getJSON(t, "/.well-known/terraform.json", http.StatusOK, nil)

	vs := names.VersionList{names.MustParseVersion("1.0.0"), names.MustParseVersion("2.0.0")}
	err := p.store.EachVersion(context.Background(), vs, func(_ context.Context, i int, _ names.Version) error {
		if i == 1 {
			panic("in a branch")
		}
		return nil
	})
	var pe *cache.PanicError
	if !errors.As(err, &pe) || pe.Value != "in a branch" {
		t.Fatalf("a panicking branch: %v", err)
	}
}
