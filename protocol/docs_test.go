package protocol

import (
	"bytes"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Encoded metadata documents are cached no longer than the tag resolution
// they were derived from: a document first built late in a resolution's
// life expires with it, not a full TTL later.
func TestDocumentCacheFollowsTagTTL(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	const ttl = 600 * time.Millisecond
	p := startProxy(t, Options{ProviderTemplate: mustTemplate(t, "oci-layout:"+dir+"/${namespace}/${type}"), TagTTL: ttl})
	const doc = "/v1/mirror/example.com/test/hello/1.0.0.json"
	start := time.Now()
	// Resolves the tag (cached until start+ttl) through another document.
	p.getJSON(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 200, nil)
	time.Sleep(ttl / 2)
	first := p.get(t, doc).Body // built from the cached resolution
	if again := p.get(t, doc).Body; !bytes.Equal(first, again) {
		t.Fatalf("warm document differs:\n%s\n%s", first, again)
	}
	push(t, repo, thirdPartyArtifact(t, map[names.Platform][]byte{{OS: "linux", Arch: "amd64"}: []byte("another zip")}), "1.0.0")
	time.Sleep(time.Until(start.Add(ttl + 50*time.Millisecond)))
	if now := p.get(t, doc).Body; bytes.Equal(first, now) {
		t.Fatalf("document outlived its tag resolution:\n%s", now)
	}
}

// With signed archive URLs, a cached document is only reused while signing
// again would give the same URLs.
func TestDocumentCacheSignedURLs(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	const token = "a-client-token-of-some-length"
	p := startProxy(t, Options{ProviderTemplate: mustTemplate(t, "oci-layout:"+dir+"/${namespace}/${type}"), AuthTokens: []string{token}})
	get := func() []byte {
		t.Helper()
		resp := p.do(t, "GET", "/v1/mirror/example.com/test/hello/1.0.0.json", map[string]string{"Authorization": "Bearer " + token})
		if resp.Status != 200 {
			t.Fatalf("%d %s", resp.Status, resp.Body)
		}
		return resp.Body
	}
	now := time.Unix(1_700_000_000, 0)
	p.urls.now = func() time.Time { return now }
	a := get()
	now = now.Add(999 * time.Millisecond)
	if b := get(); !bytes.Equal(a, b) {
		t.Fatalf("same second, different documents:\n%s\n%s", a, b)
	}
	now = now.Add(time.Millisecond)
	if c := get(); bytes.Equal(a, c) {
		t.Fatalf("next second, the cached document (stale signatures) was served:\n%s", c)
	}
}
