package proxy

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/modulesource"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Without --registry-hostname the registry protocol's ${hostname} is the
// request's Host, which the client chooses. Pull-through under the
// proxy's own name stores only under the name the proxy knows for
// itself (--registry-hostname, else --public-url's host): a request
// naming any other host (tf.corp.example) lists, downloads and pulls
// nothing from the registry origin, and nothing is tagged in that
// host's repository, which the network mirror would then serve. Without
// either name nothing is pulled through the registry protocol at all;
// with --public-url, a request under its host (any case, any port)
// still pulls.
func TestRegistryPullThroughOnlyUnderTheProxysOwnName(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	hello := signedRelease(t, "hello", "1.1.0", 64, "linux_amd64")
	sums, err := os.ReadFile(filepath.Join(hello, "terraform-provider-hello_1.1.0_SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, publicURL, host string
		pulls                 bool
	}{
		{"no own name, a made-up Host", "", "tf.corp.example", false},
		{"no own name, the Host clients use", "", "127.0.0.1", false},
		{"public URL, a made-up Host", "https://proxy.example:8443", "tf.corp.example", false},
		{"public URL, its host", "https://proxy.example:8443", "PROXY.example:8443", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			origin := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "test", Type: "hello", Dir: hello, Key: key}})
			dir, _ := layoutStore(t)
			base, _ := url.Parse(origin.ProvidersURL())
			pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, RegistryOrigin: "example.com", Client: originClient(t)}
			p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${hostname}/${namespace}/${type}"), PullThrough: &pt,
				PublicURL: c.publicURL, Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}})
			served := strings.ToLower(strings.Split(c.host, ":")[0])

			listed := p.getAs(t, c.host, "/v1/providers/test/hello/versions")
			if got := listed.Status == 200 && strings.Contains(string(listed.Body), "1.1.0"); got != c.pulls {
				t.Errorf("versions under Host %s: %d %s; the origin's 1.1.0 listed: %v, want %v", c.host, listed.Status, listed.Body, got, c.pulls)
			}
			pulled := p.getAs(t, c.host, "/v1/pull/r/"+served+"/test/hello/1.1.0/"+sha256Hex(sums)+"/terraform-provider-hello_1.1.0_linux_amd64.zip")
			if dl := p.getAs(t, c.host, "/v1/providers/test/hello/1.1.0/download/linux/amd64"); dl.Status == 200 {
				var doc wire.RegistryDownload
				if err := json.Unmarshal(dl.Body, &doc); err != nil {
					t.Fatal(err)
				}
				u, _ := url.Parse(doc.DownloadURL)
				pulled = p.getAs(t, c.host, u.RequestURI())
			}
			waitIdle(t, p)
			if got := pulled.Status == 200; got != c.pulls {
				t.Errorf("the package under Host %s: %d %.200q, want pulled %v", c.host, pulled.Status, pulled.Body, c.pulls)
			}
			repo := filepath.Join(dir, served, "test", "hello")
			if !c.pulls {
				if exists(repo) {
					assertUntagged(t, repo, "1.1.0", pullthrough.PulledThroughTag)
				}
				if n := origin.Count(func(p string) bool { return strings.Contains(p, "hello") }); n != 0 {
					t.Errorf("the origin was asked %d times about test/hello under Host %s", n, c.host)
				}
				if r := p.get(t, "/v1/mirror/"+served+"/test/hello/index.json"); r.Status == 200 && strings.Contains(string(r.Body), "1.1.0") {
					t.Errorf("the mirror serves the origin's release as %s's: %s", served, r.Body)
				}
				return
			}
			if _, err := layoutRepo(t, repo).Resolve(t.Context(), "1.1.0"); err != nil {
				t.Errorf("1.1.0 not stored under the proxy's own name: %v", err)
			}
		})
	}
}

// The proxy's own modules alike: --pull-through-own-modules pulls from
// the module origin only under the proxy's own name, never under a Host
// the client made up, and not at all while the proxy knows no name of
// its own.
func TestOwnModulesPullOnlyUnderTheProxysOwnName(t *testing.T) {
	cases := []struct {
		name, publicURL, host string
		pulls                 bool
	}{
		{"no own name, a made-up Host", "", "tf.corp.example", false},
		{"no own name, the Host clients use", "", "127.0.0.1", false},
		{"public URL, a made-up Host", "https://proxy.example", "tf.corp.example", false},
		{"public URL, its host", "https://proxy.example", "Proxy.Example:443", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := testenv.StartFileSite(t, testenv.OriginOptions{})
			files.Put(t, "greeting.zip", moduleZip(t, "1.99.0"))
			o := testenv.StartModuleRegistry(t, testenv.OriginOptions{})
			o.Set("acme/greeting/aws", "1.99.0", testenv.ModuleAnswer{Location: "https://" + files.Host + "/greeting.zip"})
			dir, _ := moduleStore(t)
			p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+dir+"/${hostname}/${namespace}/${name}/${system}")},
				PullThrough: ownModulesPullThrough(t, o.Host, files.Host, "acme/*/*"), PublicURL: c.publicURL,
				Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}})
			served := strings.ToLower(strings.Split(c.host, ":")[0])

			listed := p.getAs(t, c.host, "/v1/modules/acme/greeting/aws/versions")
			if got := strings.Contains(string(listed.Body), "1.99.0"); got != c.pulls {
				t.Errorf("versions under Host %s: %d %s; the origin's 1.99.0 listed: %v, want %v", c.host, listed.Status, listed.Body, got, c.pulls)
			}
			dl := p.getAs(t, c.host, "/v1/modules/acme/greeting/aws/1.99.0/download")
			waitIdle(t, p)
			if got := dl.Status == http.StatusNoContent; got != c.pulls {
				t.Errorf("the download under Host %s: %d %s, want pulled %v", c.host, dl.Status, dl.Body, c.pulls)
			}
			repo := filepath.Join(dir, served, "acme", "greeting", "aws")
			if !c.pulls {
				if exists(repo) {
					assertUntagged(t, repo, "1.99.0", pullthrough.PulledThroughTag)
				}
				if n := o.Count(func(p string) bool { return strings.Contains(p, "greeting") }); n != 0 {
					t.Errorf("the module origin was asked %d times about acme/greeting/aws under Host %s", n, c.host)
				}
				return
			}
			if _, err := layoutRepo(t, repo).Resolve(t.Context(), "1.99.0"); err != nil {
				t.Errorf("1.99.0 not stored under the proxy's own name: %v", err)
			}
		})
	}
}

// ownModulesPullThrough pulls the own modules pattern names through from
// module origin host, their sources from sources.
func ownModulesPullThrough(t *testing.T, host, sources, pattern string) *pullthrough.Options {
	t.Helper()
	tr, err := oci.NewTransport(oci.Options{CAFile: testenv.NewCA(t).CertFile})
	if err != nil {
		t.Fatal(err)
	}
	f, err := modulesource.New(modulesource.Config{Registry: host, Sources: []string{sources}, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	own, err := pullthrough.ParseModulePattern(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return &pullthrough.Options{Modules: []*modulesource.Fetcher{f}, OwnModules: []pullthrough.ModulePattern{own}, Client: originClient(t)}
}
