package proxy

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// After the tag TTL a document is answered at once from the cache while
// one background read revalidates it; a version pushed meanwhile appears
// once that read is done, within about a TTL plus one upstream read.
// After the first read, each registry request is held back 4 s: "at
// once" is under half of that, room for a loaded machine.
func TestDocumentsRevalidateInTheBackground(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := registryRepo(t, reg, "p/test/hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	upstream, _ := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	const ttl, latency = time.Second, 4 * time.Second
	p := startProxy(t, Options{Client: upstream, ProviderMappings: mustMapping(t, front.Host+"/p/${namespace}/${type}"), Store: store.Options{TagTTL: ttl}})
	const index = "/v1/mirror/example.com/test/hello/index.json"
	var idx struct{ Versions map[string]any }
	p.getJSON(t, index, 200, &idx)
	push(t, repo, releaseArtifact(t, "1.1.0"), "1.1.0")
	time.Sleep(ttl + 100*time.Millisecond)
	front.SetFaults(testenv.FaultRule{Fault: testenv.Fault{Hang: latency}})

	start := time.Now()
	p.getJSON(t, index, 200, &idx)
	if took := time.Since(start); took > latency/2 {
		t.Errorf("a stale document waited for its revalidation (%s)", took)
	}
	if len(idx.Versions) != 1 {
		t.Errorf("the stale document is what was cached: %v", idx.Versions)
	}
	deadline := time.Now().Add(10 * latency)
	for len(idx.Versions) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("1.1.0 did not appear after revalidation: %v", idx.Versions)
		}
		time.Sleep(50 * time.Millisecond)
		p.getJSON(t, index, 200, &idx)
	}
}

// Documents are revalidated for at most MaxStale past their TTL; after
// that a request waits for a fresh document.
func TestDocumentsStaleForAtMostMaxStale(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		Store: store.Options{TagTTL: 100 * time.Millisecond, MaxStale: 100 * time.Millisecond}})
	const index = "/v1/mirror/example.com/test/hello/index.json"
	first := p.get(t, index).Body
	push(t, repo, releaseArtifact(t, "1.1.0"), "1.1.0")
	time.Sleep(300 * time.Millisecond)
	if now := p.get(t, index).Body; bytes.Equal(first, now) || !strings.Contains(string(now), "1.1.0") {
		t.Fatalf("a document past MaxStale was served: %s", now)
	}
}

// A re-tagged version is seen within ResolveTTL; archive URLs handed out
// before keep naming the content they were made for.
func TestRetaggedVersionSeenWithinResolveTTL(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		Store: store.Options{TagTTL: 100 * time.Millisecond, ResolveTTL: 300 * time.Millisecond, MaxStale: -1}})
	const doc = "/v1/mirror/example.com/test/hello/1.0.0.json"
	var before networkMirrorVersion
	r := p.getJSON(t, doc, 200, &before)
	oldURL := resolve(t, r.URL, before.Archives["linux_amd64"].URL)
	push(t, repo, thirdPartyArtifact(t, map[names.Platform][]byte{{OS: "linux", Arch: "amd64"}: []byte("another zip")}), "1.0.0")
	time.Sleep(400 * time.Millisecond)
	var after networkMirrorVersion
	p.getJSON(t, doc, 200, &after)
	if len(after.Archives) != 1 {
		t.Fatalf("the re-tagged version was not seen: %+v", after)
	}
	if got := p.get(t, oldURL); got.Status != 200 || !bytes.Equal(got.Body, fixtureZip(t, "1.0.0", "linux_amd64")) {
		t.Fatalf("an archive URL handed out before the re-tag changed content: %d", got.Status)
	}
}

// A tag OpenTofu lists but cannot resolve ("1.2" for 1.2.0) is left out
// of both listings with a reason, so clients choose a version they can
// install.
func TestUnresolvableTagsLeftOut(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.2")
	push(t, repo, releaseArtifact(t, "1.0.0"), "latest")
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})
	var idx struct{ Versions map[string]any }
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if len(idx.Versions) != 1 || idx.Versions["1.0.0"] == nil {
		t.Fatalf("index.json: %v", idx.Versions)
	}
	var vd versionsDoc
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	if len(vd.Versions) != 1 || len(vd.Warnings) != 1 || !strings.Contains(vd.Warnings[0], `"1.2"`) {
		t.Fatalf("versions: %+v", vd)
	}
}
