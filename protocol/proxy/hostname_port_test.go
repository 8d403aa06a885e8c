package proxy

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/cliconfig"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// A provider host with a port (a registry on a non-default port) in
// ${hostname}: inside the repository path the port's ":" is written "_"
// (docs/proxy.md, "How providers map to repositories"), so each host and
// port has its own repository and none shares one with another host.
func TestHostnameWithPortInTemplate(t *testing.T) {
	dir := t.TempDir()
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]string{"localhost_8443": "1.0.0", "localhost_9443": "1.1.0", "localhost": "2.0.0-rc1"}
	for seg, v := range held {
		repo, err := client.Open(oci.Reference{Layout: true, Repository: filepath.Join(dir, seg, "test", "hello")})
		if err != nil {
			t.Fatal(err)
		}
		push(t, repo, releaseArtifact(t, v), v)
	}
	tpl := mustTemplate(t, "oci-layout:"+dir+"/${hostname}/${namespace}/${type}")
	p := startProxy(t, Options{ProviderMappings: mapping(tpl)})
	for host, want := range map[string]string{"localhost:8443": "1.0.0", "localhost:9443": "1.1.0", "localhost": "2.0.0-rc1"} {
		if got := versionKeys(mirrorVersions(t, p, "/v1/mirror/"+host+"/test/hello/index.json")); !reflect.DeepEqual(got, []string{want}) {
			t.Errorf("network mirror for %s/test/hello: versions %v, want [%s]", host, got, want)
		}
	}
	// A host name cannot be written with "_": no address reaches a
	// host-and-port repository any other way.
	p.wantError(t, "/v1/mirror/localhost_8443/test/hello/index.json", http.StatusBadRequest, "invalid hostname")

	// The registry protocol: --registry-hostname with a port is mapped the
	// same way; without it the proxy's own name is the Host header's host
	// without port.
	q := startProxy(t, Options{ProviderMappings: mapping(tpl), RegistryHostname: "LocalHost:8443"})
	if got := registryVersions(t, q, ""); !reflect.DeepEqual(got, []string{"1.0.0"}) {
		t.Errorf("--registry-hostname localhost:8443: versions %v, want [1.0.0]", got)
	}
	r := startProxy(t, Options{ProviderMappings: mapping(tpl)})
	if got := registryVersions(t, r, "localhost:9443"); !reflect.DeepEqual(got, []string{"2.0.0-rc1"}) {
		t.Errorf("Host localhost:9443: versions %v, want [2.0.0-rc1]", got)
	}
}

// As the registry host itself (before the template's first "/"),
// ${hostname} keeps its port, as OpenTofu's oci_mirror writes it.
func TestHostnameWithPortAsRegistry(t *testing.T) {
	tpl := mustTemplate(t, "${hostname}/mirror/${namespace}/${type}")
	ref, err := tpl.Expand(map[string]string{"hostname": "localhost:5000", "namespace": "test", "type": "hello"})
	if err != nil || ref.Registry != "localhost:5000" || ref.Repository != "mirror/test/hello" {
		t.Fatalf("%+v %v", ref, err)
	}
}

// An oci_mirror block of --config is read with tofu's rules: a host with a
// port inside its repository path gives no valid repository (tofu
// refuses it too), and the client is told so, not that the provider is
// filtered out.
func TestHostnameWithPortInConfigTemplate(t *testing.T) {
	mirrors, err := cliconfig.ParseOCIMirrors([]byte(`provider_installation {
  oci_mirror {
    repository_template = "registry.example/p/${hostname}/${namespace}/${type}"
  }
}`), "test.tofurc")
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{ProviderMappings: []store.ProviderMapping{{Template: mirrors[0].Template, Label: mirrors[0].Pos}}})
	p.wantError(t, "/v1/mirror/localhost:8443/test/hello/index.json", http.StatusNotFound,
		"provider localhost:8443/test/hello: the mapping's template gives no valid repository name")
}

func versionKeys(m map[string]any) []string {
	var out []string
	for v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// registryVersions lists the versions of test/hello through the registry
// protocol, with Host header host when given.
func registryVersions(t *testing.T, p *proxy, host string) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.URL+"/v1/providers/test/hello/versions", nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct{ Versions []struct{ Version string } }
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("versions: %d %v", resp.StatusCode, err)
	}
	var out []string
	for _, v := range doc.Versions {
		out = append(out, v.Version)
	}
	sort.Strings(out)
	return out
}
