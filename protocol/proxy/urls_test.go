package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

func TestParsePublicURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://tofu.example.com", "https://tofu.example.com"},
		{"https://Tofu.Example.com:8443/", "https://tofu.example.com:8443"},
		{"https://example.com/tofu/proxy/", "https://example.com/tofu/proxy"},
		{"https://127.0.0.1:8443", "https://127.0.0.1:8443"},
		{"https://[::1]:8443/p", "https://[::1]:8443/p"},
	} {
		got, err := respond.ParsePublicURL(c.in)
		if err != nil || got != c.want {
			t.Errorf("respond.ParsePublicURL(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{
		"", "tofu.example.com", "http://tofu.example.com", "https://", "https://u:p@tofu.example.com",
		"https://tofu.example.com/?a=b", "https://tofu.example.com/#x", "https://tofu.example.com:x",
		"https://exa mple.com", "https://tofu.example.com/a/../b", "https://tofu.example.com//a",
	} {
		if got, err := respond.ParsePublicURL(bad); err == nil {
			t.Errorf("respond.ParsePublicURL(%q) = %q, want an error", bad, got)
		}
	}
	if _, err := New(Options{PublicURL: "http://x.example", ProviderMappings: mustMapping(t, "oci-layout:/nonexistent/${namespace}/${type}")}); err == nil {
		t.Error("New accepted an http public URL")
	}
}

// getAs GETs path from the proxy with the given Host header and decodes
// the JSON answer into v (when not nil); it returns the response.
func getAs(t *testing.T, p *proxy, host, path string, v any) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.URL+path, nil)
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
	if resp.StatusCode/100 != 2 {
		t.Fatalf("GET %s (Host %s): %d %s", path, host, resp.StatusCode, body)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
	}
	return resp
}

// urlsAs are the URLs of every document the proxy serves, as a client
// reaching it by host receives them.
func urlsAs(t *testing.T, p *proxy, host string) []string {
	var mv networkMirrorVersion
	getAs(t, p, host, "/v1/mirror/example.com/test/hello/1.0.0.json", &mv)
	var d downloadDoc
	getAs(t, p, host, "/v1/providers/test/hello/1.0.0/download/linux/amd64", &d)
	urls := []string{mv.Archives["linux_amd64"].URL, d.DownloadURL, d.SHASumsURL, d.SHASumsSignatureURL}
	resp := getAs(t, p, host, "/v1/modules/acme/network/aws/1.0.0/download", nil)
	return append(urls, resp.Header.Get("X-Terraform-Get"))
}

// startURLProxy serves a signed provider release and a module from
// layouts, with opts.
func startURLProxy(t *testing.T, opts Options) *proxy {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	mdir, mopen := moduleStore(t)
	push(t, mopen("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), names.TagForVersion(mustVersion(t, "1.0.0")))
	opts.ProviderMappings = mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")
	opts.ModuleMappings = []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}
	return startProxy(t, opts)
}

// The document cache is shared between clients: a client sending a
// made-up Host gets URLs to it, and no other client ever does, even when
// both hosts share a registry hostname (and so a cached registry
// document) and only the port differs.
func TestAbsoluteURLsCarryEachClientsOwnHost(t *testing.T) {
	p := startURLProxy(t, Options{})
	for round := range 2 { // the second round is answered from the cache
		for _, host := range []string{"tofu.example.com:8443", "tofu.example.com:9999", "evil.example", strings.TrimPrefix(p.URL, "https://")} {
			for _, u := range urlsAs(t, p, host) {
				if !strings.HasPrefix(u, "https://"+host+"/v1/") {
					t.Errorf("round %d, Host %s: URL %q", round, host, u)
				}
			}
		}
	}
	// The URLs work, on the host the client used.
	for _, u := range urlsAs(t, p, strings.TrimPrefix(p.URL, "https://")) {
		if r := p.get(t, u); r.Status != http.StatusOK {
			t.Errorf("GET %s: %d", u, r.Status)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, p.URL+"/v1/mirror/example.com/test/hello/1.0.0.json", nil)
	req.Host = "a.example/x"
	if resp, err := p.Client.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("invalid Host: %d, want 400", resp.StatusCode)
		}
	}
}

// A cached document keeps its body as last spliced, for the next answer
// with the same base: whatever order clients come in (the same Host twice,
// another, the first again, the same name in upper case, a Host too long
// to keep a copy for), each gets URLs to its own Host, lower-cased.
func TestSplicedAnswersFollowEachHost(t *testing.T) {
	p := startURLProxy(t, Options{})
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 58)
	hosts := []string{"tofu.example.com:8443", "tofu.example.com:8443", "evil.example", "tofu.example.com:8443",
		"TOFU.Example.com:8443", "tofu.example.com:8443", long, long, "tofu.example.com:8443", "127.0.0.1:8443"}
	for i, host := range hosts {
		for _, u := range urlsAs(t, p, host) {
			if want := "https://" + strings.ToLower(host) + "/v1/"; !strings.HasPrefix(u, want) {
				t.Errorf("answer %d, Host %s: URL %q, want it under %s", i, host, u, want)
			}
		}
	}
}

// With a public URL (a path-prefixing front), every URL is on it, whatever
// Host the client sent; signed URLs keep working behind the front.
func TestPublicURLIsTheBaseOfEveryURL(t *testing.T) {
	p := startURLProxy(t, Options{PublicURL: "https://tofu.example.com:8443/front/", AuthTokens: []string{"t0ken"}})
	p.Client.Transport = authTransport{p.Client.Transport, "t0ken"}
	for _, host := range []string{"tofu.example.com", "evil.example:1"} {
		for _, u := range urlsAs(t, p, host) {
			if !strings.HasPrefix(u, "https://tofu.example.com:8443/front/v1/") || !strings.Contains(u, "signature=") {
				t.Errorf("Host %s: URL %q", host, u)
			}
			// What the front would forward: the path without its prefix.
			pu, _ := url.Parse(u)
			pu.Path = strings.TrimPrefix(pu.Path, "/front")
			if r := p.get(t, p.URL+pu.RequestURI()); r.Status != http.StatusOK {
				t.Errorf("GET %s (as the front forwards it): %d", u, r.Status)
			}
		}
	}
	var disco map[string]string
	getAs(t, p, "evil.example", "/.well-known/terraform.json", &disco)
	if disco["providers.v1"] != "https://tofu.example.com:8443/front/v1/providers/" || disco["modules.v1"] != "https://tofu.example.com:8443/front/v1/modules/" {
		t.Errorf("discovery: %v", disco)
	}
}

type authTransport struct {
	http.RoundTripper
	token string
}

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	return a.RoundTripper.RoundTrip(r)
}

// Serving plain HTTP behind a front, without a public URL, the proxy
// cannot know the scheme or prefix clients use: URLs stay relative, and
// resolve through a path-prefixing front.
func TestPlainHTTPWithoutPublicURLKeepsRelativeURLs(t *testing.T) {
	p := startURLProxy(t, Options{})
	front := httptest.NewServer(http.StripPrefix("/front", p.Server))
	t.Cleanup(front.Close)
	for _, doc := range []string{"/v1/mirror/example.com/test/hello/1.0.0.json", "/v1/providers/test/hello/1.0.0/download/linux/amd64"} {
		resp, err := http.Get(front.URL + "/front" + doc)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Archives    map[string]struct{ URL string }
			DownloadURL string `json:"download_url"`
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		ref := v.DownloadURL + v.Archives["linux_amd64"].URL
		if !strings.HasPrefix(ref, "../") {
			t.Fatalf("%s: URL %q, want a relative one", doc, ref)
		}
		u := resolve(t, resp.Request.URL, ref)
		if !strings.HasPrefix(u, front.URL+"/front/v1/archives/") {
			t.Fatalf("%s: %q resolves to %s", doc, ref, u)
		}
		got, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		got.Body.Close()
		if got.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", u, got.StatusCode)
		}
	}
}
