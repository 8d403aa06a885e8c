package proxy

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// widgetPolicy allows 1.x but denies 2.0.0, and only linux_amd64.
const widgetPolicy = `
provider "*/*/*" {
  name      = "widgets"
  versions  = ">= 1.0"
  deny      = ["2.0.0"]
  platforms = ["linux_amd64"]
}
`

// policedPullProxy is pullProxy with a policy, pulling through from
// origin for the network mirror (example.com) and the registry protocol
// (registry hostname example.com).
func policedPullProxy(t *testing.T, origin *testenv.Origin, pol string) *proxy {
	t.Helper()
	dir := t.TempDir()
	base, _ := url.Parse(origin.ProvidersURL())
	pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, RegistryOrigin: "example.com", Client: originClient(t)}
	return startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${hostname}/${namespace}/${type}"), PullThrough: &pt,
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}, RegistryHostname: "example.com", Policy: mustPolicy(t, pol)})
}

// With pull-through and a policy, the origin's denied versions are
// absent from both listings (the versions document says why, naming the
// rule), and a direct request for one — metadata, download document, or
// a pull URL — is 404 with the reason without any request to the origin
// for that version; platforms the rule leaves out are neither offered nor
// fetched. The allowed version is pulled through as before.
func TestPullThroughPolicy(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	var rels []testenv.OriginRelease
	for _, v := range []string{"1.9.0", "2.0.0"} {
		rels = append(rels, testenv.OriginRelease{Namespace: "acme", Type: "widgets", Dir: signedRelease(t, "widgets", v, 64, "linux_amd64", "darwin_arm64"), Key: key})
	}
	rels = append(rels, testenv.OriginRelease{Namespace: "acme", Type: "banned", Dir: signedRelease(t, "banned", "2.0.0", 64, "linux_amd64"), Key: key})
	origin := testenv.StartOrigin(t, rels)
	p := policedPullProxy(t, origin, widgetPolicy)
	asked := func(s string) int { return origin.Count(func(p string) bool { return strings.Contains(p, s) }) }

	var idx wire.MirrorIndex
	p.getJSON(t, "/v1/mirror/example.com/acme/widgets/index.json", 200, &idx)
	if _, ok := idx.Versions["1.9.0"]; !ok || len(idx.Versions) != 1 {
		t.Errorf("index.json: %v, want 1.9.0 alone", idx.Versions)
	}
	var vd wire.RegistryVersions
	p.getJSON(t, "/v1/providers/acme/widgets/versions", 200, &vd)
	if len(vd.Versions) != 1 || vd.Versions[0].Version != "1.9.0" || len(vd.Versions[0].Platforms) != 1 || vd.Versions[0].Platforms[0].OS != "linux" {
		t.Errorf("versions: %+v", vd.Versions)
	}
	const denied = `2.0.0 is denied by the policy's rule "widgets"`
	if len(vd.Warnings) != 1 || !strings.Contains(vd.Warnings[0], "2.0.0 is left out: example.com/acme/widgets "+denied) {
		t.Errorf("warnings: %q", vd.Warnings)
	}
	p.wantError(t, "/v1/providers/acme/banned/versions", 404, "example.com/acme/banned "+denied)

	p.wantError(t, "/v1/mirror/example.com/acme/widgets/2.0.0.json", 404, denied)
	p.wantError(t, "/v1/providers/acme/widgets/2.0.0/download/linux/amd64", 404, denied)
	// A pull URL for 2.0.0 (as an unpoliced proxy would hand out; the
	// policy decides before the SHA256SUMS digest it names is compared).
	u := strings.Replace(pullURL(t, p, "example.com/acme/widgets", "1.9.0", "linux_amd64"), "1.9.0", "2.0.0", -1)
	p.wantError(t, strings.TrimPrefix(u, p.URL), 404, denied)
	if n := asked("2.0.0"); n != 0 {
		t.Errorf("the origin was asked %d times about the denied 2.0.0", n)
	}

	// Platforms the rule leaves out: not in <version>.json, 404 before the
	// origin is asked for the download.
	var mv wire.MirrorVersion
	p.getJSON(t, "/v1/mirror/example.com/acme/widgets/1.9.0.json", 200, &mv)
	if _, ok := mv.Archives["darwin_arm64"]; ok || len(mv.Archives) != 1 {
		t.Errorf("1.9.0.json: %+v, want linux_amd64 alone", mv.Archives)
	}
	before := asked("download/darwin")
	p.wantError(t, "/v1/providers/acme/widgets/1.9.0/download/darwin/arm64", 404, `darwin_arm64 is not among the platforms of the policy's rule "widgets"`)
	if asked("download/darwin") != before {
		t.Error("the origin was asked for a platform the policy leaves out")
	}
	dz := strings.Replace(pullURL(t, p, "example.com/acme/widgets", "1.9.0", "linux_amd64"), "linux_amd64", "darwin_arm64", 1)
	p.wantError(t, strings.TrimPrefix(dz, p.URL), 404, "darwin_arm64 is not among the platforms")

	// The allowed version is pulled through.
	if r := p.get(t, strings.TrimPrefix(pullURL(t, p, "example.com/acme/widgets", "1.9.0", "linux_amd64"), p.URL)); r.Status != 200 {
		t.Errorf("pulling the allowed 1.9.0: %d %s", r.Status, r.Body)
	}
	waitIdle(t, p)
	if n := asked("2.0.0"); n != 0 {
		t.Errorf("the origin was asked %d times about the denied 2.0.0", n)
	}
}
