package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// One bad answer for a version's manifest (garbage, an index beyond the
// limits, a digest-consistent index with a field OpenTofu refuses) is 502
// while it lasts and is forgotten within --failure-ttl once the registry
// answers well again, whatever cache held it (docs/proxy.md, "Caching and
// limits"): never kept for --resolve-ttl.
func TestBadManifestAnswersRecoverWithinFailureTTL(t *testing.T) {
	reg := testenv.StartRegistry(t)
	push(t, registryRepo(t, reg, "p/test/hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	client := registryClient(t, reg)
	const failureTTL = 300 * time.Millisecond
	for name, fault := range badManifestAnswers(t) {
		t.Run(name, func(t *testing.T) {
			front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
			p := startProxy(t, Options{Client: client, ProviderMappings: mustMapping(t, front.Host+"/p/${namespace}/${type}"),
				Store: store.Options{FailureTTL: failureTTL, ResolveTTL: time.Hour}})
			version := "/v1/mirror/example.com/test/hello/1.0.0.json"
			front.SetFaults(testenv.FaultRule{Match: isTag("1.0.0"), Fault: fault})
			if got := p.get(t, version); got.Status != http.StatusBadGateway {
				t.Fatalf("with the bad answer: %d %s; want 502", got.Status, got.Body)
			}
			front.SetFaults()
			time.Sleep(failureTTL + 200*time.Millisecond)
			if got := p.get(t, version); got.Status != http.StatusOK {
				t.Errorf("past --failure-ttl after the registry recovered: %d %s; want 200", got.Status, got.Body)
			}
		})
	}
}

// isTag matches manifest requests for a tag.
func isTag(tag string) func(*http.Request) bool {
	return func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/manifests/"+tag) }
}

// badManifestAnswers are registry answers for a provider version's tag
// the proxy must refuse.
func badManifestAnswers(t *testing.T) map[string]testenv.Fault {
	answer := func(body []byte) testenv.Fault {
		return testenv.Fault{Status: http.StatusOK, Body: body, Header: http.Header{
			"Content-Type":          {ocispec.MediaTypeImageIndex},
			"Docker-Content-Digest": {digest.FromBytes(body).String()},
		}}
	}
	huge := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: oci.ArtifactTypeProvider}
	huge.SchemaVersion = 2
	for i := 0; i < 5000; i++ {
		huge.Manifests = append(huge.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest,
			Digest: digest.FromString(fmt.Sprint(i)), Size: 100, Platform: &ocispec.Platform{OS: "linux", Architecture: fmt.Sprintf("a%d", i)}})
	}
	target := func(d digest.Digest) ocispec.Descriptor {
		return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: oci.ArtifactTypeProviderTarget,
			Digest: d, Size: 100, Platform: &ocispec.Platform{OS: "linux", Architecture: "amd64"}}
	}
	index := func(ds ...ocispec.Descriptor) ocispec.Index {
		idx := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: oci.ArtifactTypeProvider, Manifests: ds}
		idx.SchemaVersion = 2
		return idx
	}
	twice := index(target(digest.FromString("a")), target(digest.FromString("b")))
	badDigest := index(target("sha256:not-a-digest"))
	return map[string]testenv.Fault{
		"garbage":              {Garbage: true},
		"json-garbage":         answer([]byte(`{"schemaVersion": 2, "manifests": [{]}`)),
		"5000-entries":         answer(mustJSON(t, huge)),
		"two-for-one-platform": answer(mustJSON(t, twice)),
		"invalid-digest":       answer(mustJSON(t, badDigest)),
		"missing-manifest":     answer(mustJSON(t, index(target(digest.FromString("a"))))),
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
