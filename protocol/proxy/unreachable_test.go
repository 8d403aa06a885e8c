package proxy

import (
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
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
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
