package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// A registry refusing connections is unreachable: 502 for documents and
// archives alike (docs/proxy.md, "Errors"), not a 504 for a timeout that
// never happened.
func TestRegistryDownIs502(t *testing.T) {
	reg := testenv.StartRegistry(t)
	push(t, registryRepo(t, reg, "p/test/hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	client := registryClient(t, reg)
	p := startProxy(t, Options{Client: client, ProviderMappings: mustMapping(t, reg.Host+"/p/${namespace}/${type}"), Store: store.Options{FailureTTL: -1}})
	var mv networkMirrorVersion
	r := p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)
	archive := resolve(t, r.URL, mv.Archives["linux_amd64"].URL)
	reg.Stop()
	for _, path := range []string{archive, "/v1/mirror/example.com/test/hello/index.json", "/v1/providers/test/hello/versions"} {
		if got := p.get(t, path); got.Status != 502 {
			t.Errorf("%s with the registry refusing connections: %d %s", path, got.Status, got.Body)
		}
	}
}

// A repository listing more tags than the proxy reads is refused with the
// limit named, not as "an artifact OpenTofu would refuse": OpenTofu would
// list it (docs/security.md, "Bounded upstream work").
func TestTooManyTagsNamesTheLimit(t *testing.T) {
	reg := testenv.StartRegistry(t)
	push(t, registryRepo(t, reg, "p/test/hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	tags := []string{"1.0.0"}
	for i := 0; len(tags) <= oci.MaxTags; i++ { // out of lexical order (build-10 < build-2): read to the end
		tags = append(tags, fmt.Sprintf("build-%d", i))
	}
	body, _ := json.Marshal(map[string]any{"name": "p/test/hello", "tags": tags})
	front.SetFaults(testenv.FaultRule{Match: testenv.MatchTagList, Fault: testenv.Fault{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}})
	client := registryClient(t, reg)
	p := startProxy(t, Options{Client: client, ProviderMappings: mustMapping(t, front.Host+"/p/${namespace}/${type}")})
	for _, path := range []string{"/v1/mirror/example.com/test/hello/index.json", "/v1/providers/test/hello/versions"} {
		got := p.get(t, path)
		if got.Status != http.StatusBadGateway || !strings.Contains(string(got.Body), fmt.Sprintf("more than %d tags", oci.MaxTags)) || strings.Contains(string(got.Body), "would refuse") {
			t.Errorf("%s with %d tags: %d %s; want 502 naming the limit", path, len(tags), got.Status, got.Body)
		}
	}
}
