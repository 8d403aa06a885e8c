package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
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

// The page's deliveries escape what an endpoint chooses (its status
// line, shown in the last error), and the minimal page client
// authentication shows lists no deliveries: subscription names, types,
// subjects and errors are for those who see the whole page.
func TestEventsPageEscapesAndHidesDeliveries(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if r, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					io.Copy(io.Discard, r.Body)
					io.WriteString(c, "HTTP/1.1 410 <script>alert(1)</script>\r\nContent-Length: 0\r\n\r\n")
				}
			}()
		}
	}()
	file := eventsFile(t, t.TempDir(), map[string]string{"hostile": "http://" + ln.Addr().String() + "/"}, webhook.NewSecret())
	p := policedEventsProxy(t, file)
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, "denied")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		page := string(p.get(t, "/").Body)
		if strings.Contains(page, `id="webhook-deliveries"`) {
			if strings.Contains(page, "<script>alert") || !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
				t.Errorf("the endpoint's status line is not escaped:\n%s", grepLines(page, "alert"))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no delivery on the page:\n%s", page)
		}
	}

	rc := newHookReceiver(t)
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	pushAttested(t, repo, "1.1.0", nil)
	const token = "client-token-0123"
	authed := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: mustPolicy(t, eventsPolicy),
		RegistryHostname: "example.com", AuthTokens: []string{token},
		EventsFile: eventsFile(t, t.TempDir(), map[string]string{"security": rc.URL}, rc.Secret)})
	if r := authed.do(t, http.MethodGet, "/v1/mirror/example.com/test/hello/1.1.0.json", map[string]string{"Authorization": "Bearer " + token}); r.Status != 404 {
		t.Fatalf("a denied version with the token: %d", r.Status)
	}
	rc.ofType(t, events.TypePolicyDenied, 1)
	eventuallyRecent(t, authed)
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer " + token}} {
		if page := string(authed.do(t, http.MethodGet, "/", h).Body); strings.Contains(page, "webhook") || strings.Contains(page, "security") {
			t.Errorf("the minimal page shows deliveries:\n%s", grepLines(page, "webhook"))
		}
	}
}

// eventuallyRecent waits until p's dispatcher recorded a delivery ended.
func eventuallyRecent(t *testing.T, p *proxy) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(p.Server.events.deliveries()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no delivery ended within 10 s")
		}
	}
}
