//go:build walk

package proxy

// The walks of docs/architecture.md ("The path of a request"): each test
// sets up a server and, with WALK=1, makes the request walked, so that
// tools/walk/walk.sh can count the files the request alone enters (the
// coverage blocks it adds). Built only with -tags walk: without coverage
// they measure nothing.

import (
	"os"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// TestWalkHeldVersion: a held <version>.json, one mapping, no policy.
func TestWalkHeldVersion(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})
	p.get(t, "/v1/mirror/example.com/test/hello/index.json") // connections, caches of the tag list warm as a client would have them
	if os.Getenv("WALK") == "1" {
		p.get(t, "/v1/mirror/example.com/test/hello/1.0.0.json")
	}
}

// TestWalkModuleDownload: a module download and the archive it names.
func TestWalkModuleDownload(t *testing.T) {
	mdir, mopen := moduleStore(t)
	push(t, mopen("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), names.TagForVersion(mustVersion(t, "1.0.0")))
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}})
	p.get(t, "/v1/modules/acme/network/aws/versions")
	if os.Getenv("WALK") == "1" {
		u := p.moduleDownload(t, "/v1/modules/acme/network/aws/1.0.0/download", nil)
		p.get(t, u)
	}
}
