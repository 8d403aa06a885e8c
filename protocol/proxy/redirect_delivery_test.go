package proxy

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// With RedirectArchives, an archive of a registry that redirects blob
// downloads is answered with a redirect to the storage URL: the proxy
// streams none of its bytes, answers HEAD itself with the size (presigned
// GET URLs refuse HEAD), and no registry credential reaches the storage.
// A registry serving blobs itself is streamed as always.
func TestRedirectArchives(t *testing.T) {
	reg := testenv.StartRegistryWithAuth(t, "user", "Pa55word")
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, Username: "user", Password: "Pa55word"})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: "p/test/hello"})
	if err != nil {
		t.Fatal(err)
	}
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	zip := fixtureZip(t, "1.0.0", "linux_amd64")
	storage := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Redirect: testenv.RedirectOtherHost})
	direct := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	for _, c := range []struct {
		name     string
		front    *testenv.Front
		redirect bool
	}{{"storage", storage, true}, {"served-by-registry", direct, false}} {
		t.Run(c.name, func(t *testing.T) {
			p := startProxy(t, Options{Client: client, RedirectArchives: true, ProviderMappings: mustMapping(t, c.front.Host+"/p/${namespace}/${type}")})
			p.Client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			var mv networkMirrorVersion
			r := p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)
			archive := resolve(t, r.URL, mv.Archives["linux_amd64"].URL)
			head := p.do(t, http.MethodHead, archive, nil)
			if head.Status != 200 || head.Header.Get("Content-Length") != strconv.Itoa(len(zip)) {
				t.Errorf("HEAD: %d, Content-Length %q; want 200 and %d from the proxy", head.Status, head.Header.Get("Content-Length"), len(zip))
			}
			got := p.get(t, archive)
			if !c.redirect {
				if got.Status != 200 || !bytes.Equal(got.Body, zip) {
					t.Fatalf("a registry serving blobs itself: %d, %d bytes; want the archive streamed", got.Status, len(got.Body))
				}
				return
			}
			loc := got.Header.Get("Location")
			if got.Status != http.StatusTemporaryRedirect || !strings.HasPrefix(loc, storage.Redirects.URL+"/") {
				t.Fatalf("GET: %d, Location %q; want 307 to %s", got.Status, loc, storage.Redirects.URL)
			}
			body := fetchFromStorage(t, reg.CA, loc)
			if !bytes.Equal(body, zip) {
				t.Errorf("the storage URL served %d bytes, not the archive", len(body))
			}
			if leaked := storage.Redirects.WithAuthorization(); len(leaked) != 0 {
				t.Errorf("a credential reached the storage: %+v", leaked)
			}
			if m := string(p.get(t, "/metrics").Body); !strings.Contains(m, "oci_tofu_proxy_archive_bytes_streamed_total 0") || !strings.Contains(m, "oci_tofu_proxy_archive_redirects_total 1") {
				t.Errorf("metrics: want no bytes streamed and one redirect:\n%s", grepLines(m, "oci_tofu_proxy_archive"))
			}
		})
	}
}

// fetchFromStorage GETs a storage URL as a client would: no credentials.
func fetchFromStorage(t *testing.T, ca *testenv.CA, loc string) []byte {
	t.Helper()
	resp, err := ca.HTTPClient().Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("storage: %d %v", resp.StatusCode, err)
	}
	return body
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A client that sends credentials is not redirected to storage its HTTP
// client would send them on to (Go's rule: the same host name, any port,
// or a subdomain): the archive is streamed instead. Without credentials
// the same download is redirected.
func TestRedirectArchivesKeepClientTokensFromStorage(t *testing.T) {
	reg := testenv.StartRegistryWithAuth(t, "user", "Pa55word")
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, Username: "user", Password: "Pa55word"})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: "p/test/hello"})
	if err != nil {
		t.Fatal(err)
	}
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	zip := fixtureZip(t, "1.0.0", "linux_amd64")
	storage := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Redirect: testenv.RedirectOtherHost}) // 127.0.0.1, another port
	p := startProxy(t, Options{Client: client, RedirectArchives: true, ProviderMappings: mustMapping(t, storage.Host+"/p/${namespace}/${type}")})
	p.Client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if !strings.HasPrefix(p.URL, "https://127.0.0.1:") {
		t.Fatalf("the proxy is at %s; the test needs it on the storage's host name", p.URL)
	}
	var mv networkMirrorVersion
	r := p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)
	archive := resolve(t, r.URL, mv.Archives["linux_amd64"].URL)
	withToken := p.do(t, http.MethodGet, archive, map[string]string{"Authorization": "Bearer a-client-token"})
	if withToken.Status != 200 || !bytes.Equal(withToken.Body, zip) {
		t.Fatalf("with a token: %d (Location %q); want the archive streamed", withToken.Status, withToken.Header.Get("Location"))
	}
	if got := p.get(t, archive); got.Status != http.StatusTemporaryRedirect {
		t.Errorf("without a token: %d, want 307 to storage", got.Status)
	}
}
