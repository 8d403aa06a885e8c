package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
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

// denyAllPolicy denies every version of every address: a locked-down
// proxy's policy, its rules (here none) allowing what it serves.
const denyAllPolicy = `default = "deny"`

// TestEventsInventedHostsAreBounded: the network mirror's URL names the
// provider's host, and a mapping without ${hostname} serves the same
// releases under any host a client writes there; each host's listing
// is decided anew, so a client inventing hosts made a policy.denied
// event per host and version without end. Decisions about addresses at
// more than maxEventHosts hosts per generation are not sent; those at
// the proxy's own host always are.
func TestEventsInventedHostsAreBounded(t *testing.T) {
	rc := newHookReceiver(t)
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	pushAttested(t, repo, "1.0.0", nil)
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: mustPolicy(t, denyAllPolicy),
		RegistryHostname: "example.com", PublicURL: "https://tofu.example.com",
		EventsFile: eventsFile(t, t.TempDir(), map[string]string{"all": rc.URL}, rc.Secret)})
	const invented = 3 * maxEventHosts
	for i := range invented {
		p.get(t, fmt.Sprintf("/v1/mirror/h%d.example/test/hello/index.json", i))
	}
	p.get(t, "/v1/mirror/example.com/test/hello/index.json") // the own host's, after them all
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got, _ := rc.events()
		if slices.ContainsFunc(got, func(e events.Event) bool { return e.Subject == "example.com/test/hello@1.0.0" }) {
			if len(got) > maxEventHosts+1 {
				t.Errorf("%d events for %d invented hosts, want at most %d", len(got), invented, maxEventHosts+1)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no event of the own host's denial within 10 s (%d events)", len(got))
		}
	}
}

// Decisions about addresses at more than maxEventHosts hosts are not
// sent in a generation, the known hosts (the proxy's own, pull-through's
// origins) aside; a new generation sends them again.
func TestDecisionsSentBoundHosts(t *testing.T) {
	s := decisionsSent{known: map[string]bool{"own.example": true}}
	k := func(host string) decisionKey {
		return decisionKey{kind: "provider", address: host + "/test/hello", version: "1.0.0", rule: "default", denied: true}
	}
	sent := 0
	for i := range 3 * maxEventHosts {
		if s.first(1, k(fmt.Sprintf("h%d.example", i)), false) {
			sent++
		}
	}
	if sent != maxEventHosts {
		t.Errorf("%d hosts' decisions sent, want %d", sent, maxEventHosts)
	}
	if !s.first(1, k("own.example"), false) || !s.first(1, decisionKey{kind: "provider", address: "h0.example/test/other", version: "1.0.0"}, false) {
		t.Error("the own host's, or a host's already seen, decision is not sent")
	}
	if !s.first(2, k("h299.example"), false) {
		t.Error("a new generation does not send a new host's decision")
	}
}

// The known hosts are the proxy's own and pull-through's origins.
func TestKnownHosts(t *testing.T) {
	origin, _ := url.Parse("https://registry.opentofu.org")
	k := knownHosts(Options{PublicURL: "https://Tofu.Example.com:8443", PullThrough: &pullthrough.Options{Origins: map[string]*url.URL{"registry.opentofu.org": origin}}})
	if len(k) != 2 || !k["tofu.example.com"] || !k["registry.opentofu.org"] {
		t.Errorf("known hosts %v", k)
	}
	if k := knownHosts(Options{}); len(k) != 0 {
		t.Errorf("known hosts without any named: %v", k)
	}
}
