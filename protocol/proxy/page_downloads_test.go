package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Without an audit file the page counts downloads: a package downloaded
// twice shows with its counts, its events and a refusal among the newest
// events, as a deprecated version still in use; /metrics counts the
// downloads by kind and source and the refusals by outcome.
func TestPageShowsDownloads(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		push(t, repo, releaseArtifact(t, v), v)
	}
	pol := mustPolicy(t, `
provider "example.com/test/hello" {
  name = "no-1.1"
  deny = ["1.1.0"]
  deprecated {
    versions = "< 1.1.0"
    message  = "1.0 is end of life"
  }
}`)
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: pol})

	// The listing records the deprecation on the page.
	if r := p.get(t, "/v1/mirror/example.com/test/hello/index.json"); r.Status != http.StatusOK {
		t.Fatalf("index: %d %s", r.Status, r.Body)
	}
	var doc struct {
		Archives map[string]struct{ URL string } `json:"archives"`
	}
	r := p.get(t, "/v1/mirror/example.com/test/hello/1.0.0.json")
	if err := json.Unmarshal(r.Body, &doc); err != nil || r.Status != http.StatusOK {
		t.Fatalf("document: %d %s", r.Status, r.Body)
	}
	archive := resolve(t, r.URL, doc.Archives["linux_amd64"].URL)
	for range 2 {
		if got := p.get(t, archive); got.Status != http.StatusOK {
			t.Fatalf("archive: %d %s", got.Status, got.Body)
		}
	}
	if got := p.do(t, http.MethodHead, archive, nil); got.Status != http.StatusOK { // no download
		t.Fatalf("HEAD archive: %d", got.Status)
	}
	if got := p.get(t, "/v1/mirror/example.com/test/hello/1.1.0.json"); got.Status != http.StatusNotFound {
		t.Fatalf("denied version: %d %s", got.Status, got.Body)
	}

	page := string(p.get(t, "/").Body)
	section, _, _ := strings.Cut(page[strings.Index(page, `<section id="downloads">`)+1:], "</section>")
	for _, want := range []string{
		`<tr><td>provider <code>example.com/<wbr>test/<wbr>hello</code></td><td>2</td><td>2</td></tr>`,
		`<td>anonymous</td><td class="ok">delivered</td><td>provider <code>example.com/<wbr>test/<wbr>hello</code> 1.0.0 <span class="muted">linux_amd64</span></td>`,
		`<td class="bad">denied</td>`,
		`<code>no-1.1</code>`,
		`<h3>Deprecated versions still in use</h3>`,
		`<td>1.0.0</td><td class="warn">1.0 is end of life</td><td>anonymous</td>`,
	} {
		if !strings.Contains(section, want) {
			t.Errorf("the page's downloads lack %s:\n%s", want, section)
		}
	}
	if n := strings.Count(section, `class="ok">delivered`); n != 2 {
		t.Errorf("%d downloads among the events, want 2 (a HEAD is none)", n)
	}

	for series, want := range map[string]string{
		`oci_tofu_proxy_downloads_total{kind="provider",source="held"}`:   "2",
		`oci_tofu_proxy_downloads_total{kind="provider",source="pulled"}`: "0",
		`oci_tofu_proxy_downloads_total{kind="module",source="held"}`:     "0",
		`oci_tofu_proxy_refusals_total{outcome="denied"}`:                 "1",
		`oci_tofu_proxy_refusals_total{outcome="unauthenticated"}`:        "0",
	} {
		if got := p.metric(t, series); got != want {
			t.Errorf("%s = %q, want %s", series, got, want)
		}
	}
}
