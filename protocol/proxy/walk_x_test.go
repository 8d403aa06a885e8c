package proxy

import (
	"os"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func TestWalkHeldVersion(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})
	p.get(t, "/v1/mirror/example.com/test/hello/index.json") // connections, caches of the tag list warm as a client would have them
	if os.Getenv("WALK") == "1" {
		p.get(t, "/v1/mirror/example.com/test/hello/1.0.0.json")
	}
}

func TestWalkModuleDownload(t *testing.T) {
	mdir, mopen := moduleStore(t)
	push(t, mopen("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), names.TagForVersion(mustVersion(t, "1.0.0")))
	p := startProxy(t, Options{ModuleMappings: []*oci.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}})
	p.get(t, "/v1/modules/acme/network/aws/versions")
	if os.Getenv("WALK") == "1" {
		u := p.moduleDownload(t, "/v1/modules/acme/network/aws/1.0.0/download", nil)
		p.get(t, u)
	}
}
