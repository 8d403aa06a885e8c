package proxy

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// mergedPullProxy serves two oci-layout mappings of every provider with
// pull-through from origin as example.com (registry protocol origin
// too; the proxy is proxy.example), the second holding test/hello 1.0.0
// under both names; it returns the first mapping's directory of
// example.com's providers. The templates carry ${hostname}: the network
// mirror's example.com/test/hello is then the origin's by name, and
// merged with what the mappings hold, pushed or not (without
// ${hostname}, or with --registry-hostname example.com, pushed versions
// keep the origin out on every path:
// TestMirrorPullThroughLeavesPushedProvidersAlone,
// TestMirrorPullThroughLeavesOwnHostnameRepositoriesAlone).
func mergedPullProxy(t *testing.T, origin *testenv.Origin) (*proxy, string) {
	t.Helper()
	dirA, _ := layoutStore(t)
	dirB, openB := layoutStore(t)
	push(t, openB("example.com/test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	push(t, openB("proxy.example/test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	mappings := append(mustMapping(t, "oci-layout:"+dirA+"/${hostname}/${namespace}/${type}"), mustMapping(t, "oci-layout:"+dirB+"/${hostname}/${namespace}/${type}")...)
	mappings[1].Label = "second"
	base, _ := url.Parse(origin.ProvidersURL())
	pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, RegistryOrigin: "example.com", Client: originClient(t)}
	return startProxy(t, Options{ProviderMappings: mappings, PullThrough: &pt, RegistryHostname: "proxy.example",
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}}), filepath.Join(dirA, "example.com")
}

// With pull-through and two mappings covering a provider, the listing
// is both mappings' versions and the origin's; a version only the second
// mapping holds is served from it (before, only the first mapping was
// read with pull-through, and its download was not found); a version no
// mapping holds is pulled from the origin into the first mapping.
func TestMergedMappingsWithPullThrough(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "test", Type: "hello", Dir: signedRelease(t, "hello", "2.0.0", 64, "linux_amd64"), Key: key}})
	p, dirA := mergedPullProxy(t, origin)

	var idx wire.MirrorIndex
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if _, ok := idx.Versions["1.0.0"]; !ok || len(idx.Versions) != 2 {
		t.Fatalf("index.json: %v, want the second mapping's 1.0.0 and the origin's 2.0.0", idx.Versions)
	}
	var mv networkMirrorVersion
	r := p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)
	a := mv.Archives["linux_amd64"]
	if !strings.Contains(a.URL, "/archives/") {
		t.Fatalf("1.0.0.json: %+v, want the second mapping's stored release", mv)
	}
	if got := p.get(t, resolve(t, r.URL, a.URL)); got.Status != 200 || string(got.Body) != string(fixtureZip(t, "1.0.0", "linux_amd64")) {
		t.Errorf("1.0.0 linux_amd64 from the second mapping: %d", got.Status)
	}
	if n := origin.Count(func(p string) bool { return strings.Contains(p, "1.0.0") }); n != 0 {
		t.Errorf("the origin was asked %d times about a version the second mapping holds", n)
	}

	u := pullURL(t, p, "example.com/test/hello", "2.0.0", "linux_amd64")
	if got := p.get(t, u); got.Status != 200 {
		t.Fatalf("2.0.0 pulled from the origin: %d %s", got.Status, got.Body)
	}
	waitIdle(t, p)
	if _, err := os.Stat(filepath.Join(dirA, "test", "hello", "index.json")); err != nil {
		t.Errorf("the pull did not store into the first mapping: %v", err)
	}
	var mv2 networkMirrorVersion
	p.getJSON(t, "/v1/mirror/example.com/test/hello/2.0.0.json", 200, &mv2)
	if a := mv2.Archives["linux_amd64"]; !strings.Contains(a.URL, "/archives/") {
		t.Errorf("2.0.0.json once pulled: %+v, want the first mapping's stored release", mv2)
	}
}

// The origin down while the first mapping holds nothing of a provider:
// the later mapping's versions are listed (a degraded listing, logged),
// not the origin's failure.
func TestMergedMappingsWithPullThroughOriginDown(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "test", Type: "hello", Dir: signedRelease(t, "hello", "2.0.0", 64, "linux_amd64"), Key: key}})
	p, _ := mergedPullProxy(t, origin)
	origin.Stop()

	var idx wire.MirrorIndex
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if _, ok := idx.Versions["1.0.0"]; !ok || len(idx.Versions) != 1 {
		t.Errorf("index.json with the origin down: %v, want the second mapping's 1.0.0", idx.Versions)
	}
	if !strings.Contains(p.logs.String(), "listing only what the registry holds") {
		t.Errorf("the degraded listing was not logged:\n%s", p.logs.String())
	}
	var mv networkMirrorVersion
	p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)
}

// Through the registry protocol, versions pushed to a later mapping keep
// the origin's provider of that name out, as versions pushed to the
// first do (dependency confusion): they are listed alone, and the origin
// is not asked.
func TestMergedMappingsWithRegistryPullThroughLeavePushedProvidersAlone(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "test", Type: "hello", Dir: signedRelease(t, "hello", "2.0.0", 64, "linux_amd64"), Key: key}})
	p, _ := mergedPullProxy(t, origin)
	var vd wire.RegistryVersions
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	if len(vd.Versions) != 1 || vd.Versions[0].Version != "1.0.0" {
		t.Errorf("versions of a provider pushed to the second mapping: %+v, want its 1.0.0 alone", vd.Versions)
	}
	p.wantError(t, "/v1/providers/test/hello/2.0.0/download/linux/amd64", 404, "")
	if n := origin.Count(func(p string) bool { return strings.Contains(p, "test/hello") }); n != 0 {
		t.Errorf("the origin was asked %d times about a provider pushed under the proxy's name", n)
	}
}

// A first mapping whose template carries ${hostname} makes the network
// mirror's example.com/test/hello the origin's by name, but a later
// mapping merged with it whose template does not (here covering
// example.com's test/* only, which serve accepts without
// --pull-through-shared-repositories) holds the organisation's pushed
// test/hello 1.0.0 in a repository no host names: the origin's 1.1.0
// must not be listed with it nor pulled (dependency confusion through
// the later mapping).
func TestMergedMappingsLaterPushedWithoutHostnameKeepOriginOut(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "test", Type: "hello", Dir: signedRelease(t, "hello", "1.1.0", 64, "linux_amd64"), Key: key}})
	dirA, _ := layoutStore(t)
	dirB, openB := layoutStore(t)
	push(t, openB("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	mappings := append(mustMapping(t, "oci-layout:"+dirA+"/${hostname}/${namespace}/${type}"), mustMapping(t, "oci-layout:"+dirB+"/${namespace}/${type}")...)
	mappings[1].Label, mappings[1].Include = "own", []string{"example.com/test/*"}
	base, _ := url.Parse(origin.ProvidersURL())
	pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, Client: originClient(t)}
	p := startProxy(t, Options{ProviderMappings: mappings, PullThrough: &pt, RegistryHostname: "proxy.example",
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}})

	var idx wire.MirrorIndex
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if _, ok := idx.Versions["1.1.0"]; ok {
		t.Errorf("the origin's 1.1.0 is listed with the later mapping's pushed versions: %v", idx.Versions)
	}
	wantRefused(t, p, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, "pushed")
	waitIdle(t, p)
	if n := origin.Count(func(p string) bool { return strings.HasSuffix(p, ".zip") }); n != 0 {
		t.Errorf("the origin was asked %d times for a package of a provider pushed here", n)
	}
}
