package proxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// plainSite is a plain-HTTP server on 127.0.0.1, named localhost:PORT
// like the test origins, that records what reaches it.
type plainSite struct {
	Host string
	mu   sync.Mutex
	hits []string // path and Authorization of each request
}

func startPlainSite(t *testing.T) *plainSite {
	s := &plainSite{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, r.URL.Path+" Authorization="+r.Header.Get("Authorization"))
		s.mu.Unlock()
		w.Write([]byte("plain"))
	}))
	t.Cleanup(srv.Close)
	s.Host = strings.Replace(srv.Listener.Addr().String(), "127.0.0.1", "localhost", 1)
	return s
}

func (s *plainSite) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hits...)
}

// platforms are hello 1.0.0's, as the origin's download answers name
// them (os/arch) and its packages (os_arch).
var platforms = []string{"darwin_arm64", "linux_amd64", "linux_arm64", "windows_amd64"}

// setDownloadField sets a field of every platform's download answer of
// ns/hello 1.0.0 on the origin to what value gives for the platform.
func setDownloadField(t *testing.T, o *testenv.Origin, ns, field string, value func(platform string) string) {
	t.Helper()
	for _, pl := range platforms {
		o.Tamper(t, "v1/providers/"+ns+"/hello/1.0.0/download/"+strings.Replace(pl, "_", "/", 1), func(b []byte) []byte {
			var doc map[string]any
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			doc[field] = value(pl)
			out, _ := json.Marshal(doc)
			return out
		})
	}
}

// same gives every platform one value.
func same(v string) func(string) string { return func(string) string { return v } }

// zipName is hello 1.0.0's package for a platform.
func zipName(platform string) string { return "terraform-provider-hello_1.0.0_" + platform + ".zip" }

// An origin whose download answer names SHA256SUMS, its signature or a
// package on plain http, on another host (another port of 127.0.0.1 is
// another host), or on an allowed download host that redirects to one
// of those, is refused before any connection to it: the request is 502
// saying the origin's offer was refused, counted as refused, and the
// other hosts' logs stay empty. Downloads from the origin itself and from
// an allowed download host are pulled as before.
func TestPullThroughRefusesDownloadsOutsideTheAllowedHosts(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	fixture := testenv.Testdata(t, "providers", "hello", "1.0.0")
	namespaces := []string{"good", "httpsums", "othersig", "loopbacksums", "otherzip", "httpzip", "redirecthttp", "redirectother", "allowed"}
	var releases []testenv.OriginRelease
	for _, ns := range namespaces {
		releases = append(releases, testenv.OriginRelease{Namespace: ns, Type: "hello", Dir: fixture, Key: key})
	}
	origin := testenv.StartOrigin(t, releases)
	trap := testenv.StartFileSite(t, testenv.OriginOptions{})
	plain := startPlainSite(t)
	downloads := testenv.StartFileSite(t, testenv.OriginOptions{})
	trapPort := strings.TrimPrefix(trap.Host, "localhost:")
	trap.Put(t, "SHA256SUMS.sig", []byte("sig"))
	for _, pl := range platforms {
		trap.Put(t, zipName(pl), fixtureZip(t, "1.0.0", pl))
		downloads.Put(t, zipName(pl), fixtureZip(t, "1.0.0", pl))
	}
	setDownloadField(t, origin, "httpsums", "shasums_url", same("http://"+plain.Host+"/SHA256SUMS"))
	setDownloadField(t, origin, "othersig", "shasums_signature_url", same("https://"+trap.Host+"/SHA256SUMS.sig"))
	setDownloadField(t, origin, "loopbacksums", "shasums_url", same("https://127.0.0.1:"+trapPort+"/SHA256SUMS"))
	setDownloadField(t, origin, "otherzip", "download_url", func(pl string) string { return "https://" + trap.Host + "/" + zipName(pl) })
	setDownloadField(t, origin, "httpzip", "download_url", func(pl string) string { return "http://" + plain.Host + "/" + zipName(pl) })
	setDownloadField(t, origin, "redirecthttp", "download_url", func(pl string) string {
		return downloads.Redirect("to-plain/"+zipName(pl), "http://"+plain.Host+"/"+zipName(pl))
	})
	setDownloadField(t, origin, "redirectother", "download_url", func(pl string) string {
		return downloads.Redirect("to-trap/"+zipName(pl), "https://"+trap.Host+"/"+zipName(pl))
	})
	setDownloadField(t, origin, "allowed", "download_url", func(pl string) string { return "https://" + downloads.Host + "/" + zipName(pl) })
	p, _ := pullProxy(t, origin, pullthrough.Options{DownloadHosts: []string{downloads.Host}})

	for _, ns := range []string{"good", "allowed"} {
		if r := p.get(t, pullURL(t, p, "example.com/"+ns+"/hello", "1.0.0", "linux_amd64")); r.Status != 200 {
			t.Errorf("%s: %d %s", ns, r.Status, r.Body)
		}
	}
	for _, ns := range []string{"httpsums", "othersig", "loopbacksums"} {
		p.wantError(t, "/v1/mirror/example.com/"+ns+"/hello/1.0.0.json", 502, "was refused")
	}
	for _, ns := range []string{"otherzip", "httpzip", "redirecthttp", "redirectother"} {
		u := pullURL(t, p, "example.com/"+ns+"/hello", "1.0.0", "linux_amd64")
		if r := p.get(t, u); r.Status != 502 {
			t.Errorf("%s: %d %s, want 502", ns, r.Status, r.Body)
		}
		waitIdle(t, p)
		// The failure is remembered, with its class.
		if r := p.get(t, u); r.Status != 502 || !strings.Contains(string(r.Body), "was refused") {
			t.Errorf("%s again: %d %s, want 502 saying the origin's offer was refused", ns, r.Status, r.Body)
		}
	}
	if got := trap.Requests(); len(got) != 0 {
		t.Errorf("the other host was reached: %v", got)
	}
	if got := plain.requests(); len(got) != 0 {
		t.Errorf("the plain-http host was reached: %v", got)
	}
	// The SHA256SUMS refusals come while the release is resolved, the
	// package refusals while it is pulled.
	if got := p.metric(t, `oci_tofu_proxy_pullthrough_origin_errors_total{failure="refused",kind="provider"}`); got != "3" {
		t.Errorf("origin reads refused: %q, want 3", got)
	}
	if got := p.metric(t, `oci_tofu_proxy_pullthrough_releases_total{kind="provider",result="refused"}`); got != "4" {
		t.Errorf("releases refused: %q, want 4", got)
	}
	if !strings.Contains(p.logs.String(), "refused: http://"+plain.Host+"/"+zipName("linux_amd64")) {
		t.Errorf("the log does not name the refused redirect:\n%s", p.logs.String())
	}
}

// TofuDL pull-through: the download URL template's host (here a site
// that redirects each file) and the API's host are allowed; a redirect to
// plain http or to another host is refused before any connection, the
// file is 502 saying the origin's offer was refused, and the other
// hosts' logs stay empty; a redirect back to the API's host is followed.
func TestPullThroughTofuRefusesRedirectsOutsideTheAllowedHosts(t *testing.T) {
	var dirs []string
	for _, v := range []string{"1.8.0", "1.9.0"} {
		dirs = append(dirs, testenv.Testdata(t, "tofu", v))
	}
	tofu := testenv.StartTofuOrigin(t, dirs, testenv.OriginOptions{})
	downloads := testenv.StartFileSite(t, testenv.OriginOptions{})
	trap := testenv.StartFileSite(t, testenv.OriginOptions{})
	plain := startPlainSite(t)
	file := func(v, name string) string { return "files/v" + v + "/" + name }
	// 1.8.0's SHA256SUMS goes to plain http; 1.9.0's to the origin (allowed), its signature to another host.
	downloads.Redirect(file("1.8.0", "tofu_1.8.0_SHA256SUMS"), "http://"+plain.Host+"/"+file("1.8.0", "tofu_1.8.0_SHA256SUMS"))
	downloads.Redirect(file("1.8.0", "tofu_1.8.0_SHA256SUMS.gpgsig"), "https://"+tofu.Host+"/"+file("1.8.0", "tofu_1.8.0_SHA256SUMS.gpgsig"))
	downloads.Redirect(file("1.9.0", "tofu_1.9.0_SHA256SUMS"), "https://"+tofu.Host+"/"+file("1.9.0", "tofu_1.9.0_SHA256SUMS"))
	downloads.Redirect(file("1.9.0", "tofu_1.9.0_SHA256SUMS.gpgsig"), "https://"+trap.Host+"/"+file("1.9.0", "tofu_1.9.0_SHA256SUMS.gpgsig"))
	kr, err := pgp.LoadKeyring(testenv.Testdata(t, "keys", "gpg-signer.asc"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := ingest.NewTofuOrigin(tofu.APIURL(), "https://"+downloads.Host+"/files/v{{ .Version }}/{{ .Artifact }}", []*pgp.Keyring{kr}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := tofuLayout(t)
	p := startProxy(t, Options{TofuRepository: &ref, PullThrough: &pullthrough.Options{Tofu: o, Client: originClient(t)},
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}})

	for _, v := range []string{"1.8.0", "1.9.0"} {
		p.wantError(t, "/tofu/download/v"+v+"/tofu_"+v+"_linux_amd64.zip", 502, "was refused")
	}
	if got := trap.Requests(); len(got) != 0 {
		t.Errorf("the other host was reached: %v", got)
	}
	if got := plain.requests(); len(got) != 0 {
		t.Errorf("the plain-http host was reached: %v", got)
	}
	if n := tofu.Count(func(path string) bool { return path == "/"+file("1.9.0", "tofu_1.9.0_SHA256SUMS") }); n != 1 {
		t.Errorf("the redirect to the API's host was followed %d times, want 1", n)
	}
}
