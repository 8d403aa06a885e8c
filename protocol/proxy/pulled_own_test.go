package proxy

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Dependency confusion through the Provider Registry Protocol: with
// --pull-through-registry-origin, a provider pushed under the proxy's own
// name (example.com/test/hello 1.0.0) is not merged with the origin's
// provider of that name (which offers 1.1.0): the listing, the download
// document and a made-up pull URL are the registry's alone, and the
// origin is not asked. A provider the registry does not hold is pulled
// through as before, and its repository is marked as pulled through, so
// later versions keep coming.
func TestRegistryPullThroughLeavesPushedProvidersAlone(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "test", Type: "hello", Dir: signedRelease(t, "hello", "1.1.0", 64, "linux_amd64"), Key: key},
		{Namespace: "test", Type: "other", Dir: signedRelease(t, "other", "1.0.0", 64, "linux_amd64"), Key: key},
	})
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	base, _ := url.Parse(origin.ProvidersURL())
	pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, RegistryOrigin: "example.com", Client: originClient(t)}
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), PullThrough: &pt,
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}, RegistryHostname: "example.com"})
	asked := func(s string) int { return origin.Count(func(p string) bool { return strings.Contains(p, s) }) }

	var vd wire.RegistryVersions
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	if len(vd.Versions) != 1 || vd.Versions[0].Version != "1.0.0" {
		t.Errorf("the pushed provider's versions: %+v, want 1.0.0 alone", vd.Versions)
	}
	p.wantError(t, "/v1/providers/test/hello/1.1.0/download/linux/amd64", 404, "1.1.0")
	p.wantError(t, "/v1/pull/r/example.com/test/hello/1.1.0/"+strings.Repeat("a", 64)+"/terraform-provider-hello_1.1.0_linux_amd64.zip", 404, "held as pushed")
	if n := asked("test/hello"); n != 0 {
		t.Errorf("the origin was asked %d times about a provider pushed under the proxy's name", n)
	}

	p.getJSON(t, "/v1/providers/test/other/versions", 200, &vd)
	if len(vd.Versions) != 1 || vd.Versions[0].Version != "1.0.0" {
		t.Fatalf("a provider the registry does not hold: %+v, want the origin's 1.0.0", vd.Versions)
	}
	var dl wire.RegistryDownload
	r := p.getJSON(t, "/v1/providers/test/other/1.0.0/download/linux/amd64", 200, &dl)
	if got := p.get(t, resolve(t, r.URL, dl.DownloadURL)); got.Status != 200 {
		t.Fatalf("the pulled package: %d %s", got.Status, got.Body)
	}
	waitIdle(t, p)
	pulled, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := pulled.OpenReadOnly(context.Background(), oci.Reference{Layout: true, Repository: filepath.Join(dir, "test", "other")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Resolve(context.Background(), pullthrough.PulledThroughTag); err != nil {
		t.Errorf("the pulled provider's repository is not marked %s: %v", pullthrough.PulledThroughTag, err)
	}
}
