package proxy

import (
	"fmt"
	"slices"
	"testing"

	"github.com/oci-tofu/oci-tofu/protocol/events"
)

// floodPolicy serves >= 1.1.0 of example.com/test/hello and deprecates
// 1.1.0.
const floodPolicy = `
provider "example.com/test/hello" {
  name     = "hello"
  versions = ">= 1.1.0"
  deprecated {
    versions = "1.1.0"
    message  = "1.1 is end of life"
  }
}`

// TestEventsInventedVersionsAreBounded: a client asking for versions
// that exist nowhere, each of which the policy would deny, makes at most
// maxAskedKeys policy.denied events per policy generation: otherwise any
// client could make the proxy sign and send an event per version it
// invents, flooding the receivers and pushing real events out of the
// bounded queues. A denied version asked before is sent; what a listing
// decides is sent whatever was asked.
func TestEventsInventedVersionsAreBounded(t *testing.T) {
	rc := newHookReceiver(t)
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		pushAttested(t, repo, v, nil)
	}
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: mustPolicy(t, floodPolicy),
		RegistryHostname: "example.com", PublicURL: "https://tofu.example.com",
		EventsFile: eventsFile(t, t.TempDir(), map[string]string{"all": rc.URL}, rc.Secret)})

	p.wantError(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 404, `hello`)
	const invented = 3 * maxAskedKeys
	for i := range invented {
		p.wantError(t, fmt.Sprintf("/v1/mirror/example.com/test/hello/0.0.%d.json", i), 404, "")
	}
	var index struct{ Versions map[string]any }
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &index) // a listing: 1.1.0 warned
	// Emitted in the requests' order, delivered in it: once the listing's
	// warning arrived, every earlier event has.
	rc.ofType(t, events.TypePolicyWarned, 1)
	got, _ := rc.events()
	var denied []string
	for _, e := range got {
		if e.Type == events.TypePolicyDenied {
			denied = append(denied, e.Subject)
		}
	}
	if len(denied) > maxAskedKeys || !slices.Contains(denied, "example.com/test/hello@1.0.0") {
		t.Errorf("%d policy.denied events of %d invented versions, want at most %d and 1.0.0's; got %q", len(denied), invented, maxAskedKeys, denied)
	}
}
