package proxy

import (
	"net/http"
	"testing"
)

// A release of type hello held in the repository the template maps
// acme/gizmos to is not offered as installable: tofu would install it and
// fail to find terraform-provider-gizmos. The download and mirror
// documents answer an error naming both types.
func TestHeldProviderOfAnotherType(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("acme", "gizmos"), releaseArtifact(t, "1.0.0"), "1.0.0")
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})
	const msg = "is of provider type hello, not gizmos"
	p.wantError(t, "/v1/providers/acme/gizmos/1.0.0/download/linux/amd64", http.StatusBadGateway, msg)
	p.wantError(t, "/v1/mirror/registry.opentofu.org/acme/gizmos/1.0.0.json", http.StatusBadGateway, msg)
}
