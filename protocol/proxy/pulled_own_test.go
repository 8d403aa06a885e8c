package proxy

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/modulesource"
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

// Dependency confusion through the network mirror's origin paths: with a
// template without ${hostname}, example.com/test/hello (the origin's
// address) and proxy.example/test/hello (the proxy's own) share one
// repository, which holds a pushed 1.0.0. No request on the origin's
// paths — its index, its version document, a pull URL made from the
// origin's own SHA256SUMS, all unauthenticated — merges the origin's
// 1.1.0 in or stores it: the version and the pull URL are refused naming
// the pushed versions, nothing is tagged (not 1.1.0, not the
// pulled-through tag), the origin is never asked for a package, and the
// registry protocol still serves 1.0.0 alone under the proxy's name. A
// provider the registry does not hold is pulled through as before.
func TestMirrorPullThroughLeavesPushedProvidersAlone(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	hello := signedRelease(t, "hello", "1.1.0", 64, "linux_amd64")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "test", Type: "hello", Dir: hello, Key: key},
		{Namespace: "test", Type: "other", Dir: signedRelease(t, "other", "1.0.0", 64, "linux_amd64"), Key: key},
	})
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	base, _ := url.Parse(origin.ProvidersURL())
	pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, RegistryOrigin: "example.com", Client: originClient(t)}
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), PullThrough: &pt,
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}, RegistryHostname: "proxy.example"})

	var idx wire.MirrorIndex
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if _, ok := idx.Versions["1.1.0"]; ok {
		t.Errorf("the origin's 1.1.0 is listed with the pushed versions: %+v", idx.Versions)
	}
	wantRefused(t, p, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, "pushed")
	sums, err := os.ReadFile(filepath.Join(hello, "terraform-provider-hello_1.1.0_SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	pull := "/v1/pull/m/example.com/test/hello/1.1.0/" + sha256Hex(sums) + "/terraform-provider-hello_1.1.0_linux_amd64.zip"
	wantRefused(t, p, pull, 404, "pushed")
	waitIdle(t, p)
	if n := origin.Count(func(p string) bool { return strings.HasSuffix(p, ".zip") }); n != 0 {
		t.Errorf("the origin was asked %d times for a package of a provider pushed here", n)
	}
	assertUntagged(t, filepath.Join(dir, "test", "hello"), "1.1.0", pullthrough.PulledThroughTag)
	var vd wire.RegistryVersions
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	if len(vd.Versions) != 1 || vd.Versions[0].Version != "1.0.0" {
		t.Errorf("the proxy's own test/hello: %+v, want the pushed 1.0.0 alone", vd.Versions)
	}

	if u := pullURL(t, p, "example.com/test/other", "1.0.0", "linux_amd64"); p.get(t, u).Status != 200 {
		t.Fatalf("a provider the registry does not hold was not pulled through")
	}
	waitIdle(t, p)
	ro := layoutRepo(t, filepath.Join(dir, "test", "other"))
	if _, err := ro.Resolve(context.Background(), pullthrough.PulledThroughTag); err != nil {
		t.Errorf("the pulled provider's repository is not marked %s: %v", pullthrough.PulledThroughTag, err)
	}
}

// layoutRepo opens the OCI layout at dir to read.
func layoutRepo(t *testing.T, dir string) oci.ReadOnlyRepository {
	t.Helper()
	c, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := c.OpenReadOnly(context.Background(), oci.Reference{Layout: true, Repository: dir})
	if err != nil {
		t.Fatal(err)
	}
	return ro
}

// assertUntagged fails the test if the layout at dir holds any of tags.
func assertUntagged(t *testing.T, dir string, tags ...string) {
	t.Helper()
	ro := layoutRepo(t, dir)
	for _, tag := range tags {
		if d, err := ro.Resolve(context.Background(), tag); err == nil {
			t.Errorf("%s was tagged %s (%s)", dir, tag, d.Digest)
		}
	}
}

// wantRefused is wantError going on after a mismatch (to see what else
// the request did).
func wantRefused(t *testing.T, p *proxy, u string, want int, substr string) {
	t.Helper()
	if r := p.get(t, u); r.Status != want || !strings.Contains(string(r.Body), substr) {
		t.Errorf("GET %s: %d %.300s, want %d mentioning %q", u, r.Status, r.Body, want, substr)
	}
}

// The engine refuses on its own: a pull asked for directly (as any path
// of the sources asks it) into a repository holding pushed versions
// stores nothing, says why, and reaches no origin.
func TestEngineNeverStoresIntoPushedRepositories(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "test", Type: "hello", Dir: signedRelease(t, "hello", "1.1.0", 64, "linux_amd64"), Key: key}})
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	base, _ := url.Parse(origin.ProvidersURL())
	pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, Client: originClient(t)}
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), PullThrough: &pt,
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}})
	target, _ := p.pull.MirrorTarget(names.Provider{Hostname: "example.com", Namespace: "test", Type: "hello"})
	v := names.MustParseVersion("1.1.0")
	rel, err := p.pull.ProviderRelease(context.Background(), target, v)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = p.pull.StartProvider(context.Background(), target, v, rel, rel.ZipName(names.Platform{OS: "linux", Arch: "amd64"}), true)
	if pullthrough.Classify(err) != pullthrough.FailurePushed || !strings.Contains(err.Error(), "held as pushed") {
		t.Errorf("a pull into a repository holding pushed versions: %v, want it refused as held as pushed", err)
	}
	waitIdle(t, p)
	assertUntagged(t, filepath.Join(dir, "test", "hello"), "1.1.0", pullthrough.PulledThroughTag)
	if n := origin.Count(func(p string) bool { return strings.HasSuffix(p, ".zip") }); n != 0 {
		t.Errorf("the origin was asked %d times for a package", n)
	}
}

// Modules on an origin's paths (/v1/origins/HOST/modules/…), with a
// module template without ${hostname}: acme/greeting/aws is pushed here
// (1.0.0) and published at the origin (1.99.0). Neither the listing nor
// a download brings the origin's version in: the download is refused
// naming the pushed versions, nothing is tagged (not 1.99.0, not the
// pulled-through tag), the origin's source is never fetched, and the
// proxy's own address still lists 1.0.0 alone. The engine refuses the
// same pull asked for directly. A module the registry does not hold is
// pulled through as before.
func TestOriginModulePathsLeavePushedModulesAlone(t *testing.T) {
	files := testenv.StartFileSite(t, testenv.OriginOptions{})
	files.Put(t, "greeting.zip", moduleZip(t, "1.99.0"))
	files.Put(t, "shout.zip", moduleZip(t, "1.0.0"))
	o := testenv.StartModuleRegistry(t, testenv.OriginOptions{})
	o.Set("acme/greeting/aws", "1.99.0", testenv.ModuleAnswer{Location: "https://" + files.Host + "/greeting.zip"})
	o.Set("acme/shout/aws", "1.0.0", testenv.ModuleAnswer{Location: "https://" + files.Host + "/shout.zip"})
	dir, open := moduleStore(t)
	push(t, open("acme", "greeting", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")
	tr, err := oci.NewTransport(oci.Options{CAFile: testenv.NewCA(t).CertFile})
	if err != nil {
		t.Fatal(err)
	}
	f, err := modulesource.New(modulesource.Config{Registry: o.Host, Sources: []string{files.Host}, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+dir+"/${namespace}/${name}/${system}")},
		PullThrough: &pullthrough.Options{Modules: []*modulesource.Fetcher{f}, Client: originClient(t)},
		Store:       store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}})
	originPath := "/v1/origins/" + o.Host + "/modules/"

	if got := p.moduleVersionsAt(t, originPath+"acme/greeting/aws/versions"); slices.Contains(got, "1.99.0") {
		t.Errorf("the origin's 1.99.0 is listed with the pushed versions: %v", got)
	}
	wantRefused(t, p, originPath+"acme/greeting/aws/1.99.0/download", 404, "pushed")
	ref := oci.Reference{Layout: true, Repository: filepath.Join(dir, "acme", "greeting", "aws")}
	mod, _ := names.ParseModule("acme", "greeting", "aws")
	if _, err := p.pull.PullModule(context.Background(), o.Host, ref, mod, names.MustParseVersion("1.99.0")); pullthrough.Classify(err) != pullthrough.FailurePushed {
		t.Errorf("the engine asked to pull into a repository holding pushed versions: %v, want it refused", err)
	}
	waitIdle(t, p)
	assertUntagged(t, ref.Repository, "1.99.0", pullthrough.PulledThroughTag)
	if n := files.Count(func(p string) bool { return strings.HasSuffix(p, "greeting.zip") }); n != 0 {
		t.Errorf("the origin's source of a module pushed here was fetched %d times", n)
	}
	if got := p.moduleVersionsAt(t, "/v1/modules/acme/greeting/aws/versions"); !slices.Equal(got, []string{"1.0.0"}) {
		t.Errorf("the proxy's own acme/greeting/aws: %v, want the pushed 1.0.0 alone", got)
	}

	if r := p.get(t, originPath+"acme/shout/aws/1.0.0/download"); r.Status != http.StatusNoContent {
		t.Fatalf("a module the registry does not hold: %d %s, want 204 once pulled", r.Status, r.Body)
	}
	if _, err := layoutRepo(t, filepath.Join(dir, "acme", "shout", "aws")).Resolve(context.Background(), pullthrough.PulledThroughTag); err != nil {
		t.Errorf("the pulled module's repository is not marked %s: %v", pullthrough.PulledThroughTag, err)
	}
}

// moduleVersionsAt lists the versions a modules.v1 versions URL names.
func (p *proxy) moduleVersionsAt(t *testing.T, u string) []string {
	t.Helper()
	var doc moduleVersionsDoc
	p.getJSON(t, u, 200, &doc)
	return doc.list()
}

// A repository named after the origin's host (a ${hostname} template, as
// `oci-tofu mirror` fills it) holds copies of that origin's releases:
// the network mirror merges the origin's newer versions with them and
// pulls them in, pushed or not; the registry protocol under the proxy's
// name has repositories of its own.
func TestMirrorPullThroughJoinsOriginNamedRepositories(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "test", Type: "hello", Dir: signedRelease(t, "hello", "1.1.0", 64, "linux_amd64"), Key: key}})
	dir, open := layoutStore(t)
	push(t, open("example.com/test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	base, _ := url.Parse(origin.ProvidersURL())
	pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, Client: originClient(t)}
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${hostname}/${namespace}/${type}"), PullThrough: &pt,
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}})
	var idx wire.MirrorIndex
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if _, ok := idx.Versions["1.1.0"]; !ok {
		t.Errorf("the origin's 1.1.0 is not listed with the copies of its releases: %+v", idx.Versions)
	}
	if r := p.get(t, pullURL(t, p, "example.com/test/hello", "1.1.0", "linux_amd64")); r.Status != 200 {
		t.Fatalf("the origin's 1.1.0: %d %s", r.Status, r.Body)
	}
	waitIdle(t, p)
	if _, err := layoutRepo(t, filepath.Join(dir, "example.com", "test", "hello")).Resolve(context.Background(), "1.1.0"); err != nil {
		t.Errorf("1.1.0 was not stored: %v", err)
	}
}

// A later module template merged with the first holds the
// organisation's pushed acme/greeting/aws 1.0.0 in a repository no host
// names; the first template (${hostname}, as serve requires) holds
// nothing of it. Neither the origin's path nor the proxy's own name
// (open to the origin through a wildcard --pull-through-own-modules)
// lists the origin's 1.99.0 with the pushed version or pulls it: pushed
// versions in a later mapping keep the origin out, as for providers.
func TestLaterModuleTemplatePushedKeepsOriginOut(t *testing.T) {
	files := testenv.StartFileSite(t, testenv.OriginOptions{})
	files.Put(t, "greeting.zip", moduleZip(t, "1.99.0"))
	o := testenv.StartModuleRegistry(t, testenv.OriginOptions{})
	o.Set("acme/greeting/aws", "1.99.0", testenv.ModuleAnswer{Location: "https://" + files.Host + "/greeting.zip"})
	dirA, _ := moduleStore(t)
	dirB, openB := moduleStore(t)
	push(t, openB("acme", "greeting", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")
	tr, err := oci.NewTransport(oci.Options{CAFile: testenv.NewCA(t).CertFile})
	if err != nil {
		t.Fatal(err)
	}
	f, err := modulesource.New(modulesource.Config{Registry: o.Host, Sources: []string{files.Host}, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	wildcard, err := pullthrough.ParseModulePattern("acme/*/*")
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{
		mustModuleTemplate(t, "oci-layout:"+dirA+"/${hostname}/${namespace}/${name}/${system}"),
		mustModuleTemplate(t, "oci-layout:"+dirB+"/${namespace}/${name}/${system}")},
		PullThrough:      &pullthrough.Options{Modules: []*modulesource.Fetcher{f}, OwnModules: []pullthrough.ModulePattern{wildcard}, Client: originClient(t)},
		RegistryHostname: "127.0.0.1", // the Host of p.get's requests: own modules pull through under it
		Store:            store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}})
	for _, base := range []string{"/v1/origins/" + o.Host + "/modules/", "/v1/modules/"} {
		if got := p.moduleVersionsAt(t, base+"acme/greeting/aws/versions"); slices.Contains(got, "1.99.0") {
			t.Errorf("%s: the origin's 1.99.0 is listed with the later template's pushed versions: %v", base, got)
		}
		wantRefused(t, p, base+"acme/greeting/aws/1.99.0/download", 404, "")
	}
	waitIdle(t, p)
	if n := files.Count(func(p string) bool { return strings.HasSuffix(p, "greeting.zip") }); n != 0 {
		t.Errorf("the origin's source of a module pushed here was fetched %d times", n)
	}
}

// --registry-hostname naming an origin's host (docs/proxy.md: with a
// ${hostname} template both protocols then share repositories): the
// repository of example.com/test/hello is the proxy's own too, and holds
// the organisation's pushed 1.0.0. It is not the origin's by name, so
// the network mirror's origin path neither lists the origin's 1.1.0 with
// it nor pulls it in, and the registry protocol keeps serving 1.0.0
// alone under the proxy's name.
func TestMirrorPullThroughLeavesOwnHostnameRepositoriesAlone(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "test", Type: "hello", Dir: signedRelease(t, "hello", "1.1.0", 64, "linux_amd64"), Key: key}})
	dir, open := layoutStore(t)
	push(t, open("example.com/test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	base, _ := url.Parse(origin.ProvidersURL())
	pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, Client: originClient(t)}
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${hostname}/${namespace}/${type}"), PullThrough: &pt,
		RegistryHostname: "example.com", Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}})
	var idx wire.MirrorIndex
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if _, ok := idx.Versions["1.1.0"]; ok {
		t.Errorf("the origin's 1.1.0 is listed with the proxy's own pushed versions: %+v", idx.Versions)
	}
	wantRefused(t, p, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, "pushed")
	waitIdle(t, p)
	assertUntagged(t, filepath.Join(dir, "example.com", "test", "hello"), "1.1.0", pullthrough.PulledThroughTag)
	var vd wire.RegistryVersions
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	if len(vd.Versions) != 1 || vd.Versions[0].Version != "1.0.0" {
		t.Errorf("the proxy's own test/hello: %+v, want the pushed 1.0.0 alone", vd.Versions)
	}
}

// getAs GETs u with Host header host (what a client names the proxy by).
func (p *proxy) getAs(t *testing.T, host, u string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.URL+u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := p.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: body, URL: resp.Request.URL}
}

// The registry protocol's host name, the proxy's own as the operator
// gave it (--registry-hostname, or --public-url's host), naming another
// allowed origin's host (other.example): the registry origin's
// (example.com's) release must not be pulled into the repository of
// other.example's address, where the network mirror would then serve it
// as other.example's. (A Host the client made up pulls nothing:
// TestRegistryPullThroughOnlyUnderTheProxysOwnName.)
func TestRegistryPullThroughNeverUnderAnOriginsHost(t *testing.T) {
	for _, own := range []Options{{RegistryHostname: "other.example"}, {PublicURL: "https://other.example:8443"}} {
		t.Run(own.RegistryHostname+own.PublicURL, func(t *testing.T) {
			key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
			origin := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "test", Type: "hello", Dir: signedRelease(t, "hello", "1.1.0", 64, "linux_amd64"), Key: key}})
			other := testenv.StartOrigin(t, nil)
			dir, _ := layoutStore(t)
			base, _ := url.Parse(origin.ProvidersURL())
			otherBase, _ := url.Parse(other.ProvidersURL())
			pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base, "other.example": otherBase}, RegistryOrigin: "example.com", Client: originClient(t)}
			p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${hostname}/${namespace}/${type}"), PullThrough: &pt,
				RegistryHostname: own.RegistryHostname, PublicURL: own.PublicURL, Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}})

			var dl wire.RegistryDownload
			if r := p.getAs(t, "other.example", "/v1/providers/test/hello/1.1.0/download/linux/amd64"); r.Status == 200 {
				if err := json.Unmarshal(r.Body, &dl); err != nil {
					t.Fatal(err)
				}
				u, _ := url.Parse(dl.DownloadURL)
				p.getAs(t, "other.example", u.RequestURI())
			}
			waitIdle(t, p)
			if repo := filepath.Join(dir, "other.example", "test", "hello"); exists(repo) {
				assertUntagged(t, repo, "1.1.0", pullthrough.PulledThroughTag)
			}
			if r := p.get(t, "/v1/mirror/other.example/test/hello/index.json"); r.Status != 404 {
				t.Errorf("other.example/test/hello, which other.example does not offer: %d %s, want 404", r.Status, r.Body)
			}
		})
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// The proxy's own modules under a host name naming the second module
// origin (--registry-hostname second.example): the first origin's
// module would be stored in the repository of the second origin's
// address, then served on /v1/origins/SECOND/ as the second origin's.
// Own modules pull through under no other origin's host.
func TestOwnModulesNeverUnderAnOriginsHost(t *testing.T) {
	files := testenv.StartFileSite(t, testenv.OriginOptions{})
	files.Put(t, "greeting.zip", moduleZip(t, "1.99.0"))
	first := testenv.StartModuleRegistry(t, testenv.OriginOptions{})
	first.Set("acme/greeting/aws", "1.99.0", testenv.ModuleAnswer{Location: "https://" + files.Host + "/greeting.zip"})
	second := testenv.StartModuleRegistry(t, testenv.OriginOptions{})
	dir, _ := moduleStore(t)
	tr, err := oci.NewTransport(oci.Options{CAFile: testenv.NewCA(t).CertFile})
	if err != nil {
		t.Fatal(err)
	}
	secondBase, _ := url.Parse("https://" + second.Host + "/v1/modules/")
	var fetchers []*modulesource.Fetcher
	for _, c := range []modulesource.Config{{Registry: first.Host}, {Registry: "second.example", Base: secondBase}} {
		c.Sources, c.Transport = []string{files.Host, second.Host}, tr
		f, err := modulesource.New(c)
		if err != nil {
			t.Fatal(err)
		}
		fetchers = append(fetchers, f)
	}
	wildcard, err := pullthrough.ParseModulePattern("acme/*/*")
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+dir+"/${hostname}/${namespace}/${name}/${system}")},
		PullThrough:      &pullthrough.Options{Modules: fetchers, OwnModules: []pullthrough.ModulePattern{wildcard}, Client: originClient(t)},
		RegistryHostname: "second.example",
		Store:            store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}})
	p.getAs(t, "second.example", "/v1/modules/acme/greeting/aws/versions")
	p.getAs(t, "second.example", "/v1/modules/acme/greeting/aws/1.99.0/download")
	waitIdle(t, p)
	if repo := filepath.Join(dir, "second.example", "acme", "greeting", "aws"); exists(repo) {
		assertUntagged(t, repo, "1.99.0", pullthrough.PulledThroughTag)
	}
	if got := p.get(t, "/v1/origins/second.example/modules/acme/greeting/aws/versions"); got.Status == 200 && strings.Contains(string(got.Body), "1.99.0") {
		t.Errorf("the first origin's 1.99.0 is served as the second origin's: %s", got.Body)
	}
}
