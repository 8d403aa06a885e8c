package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
	"github.com/oci-tofu/oci-tofu/protocol/modulesource"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// hookReceiver is a webhook endpoint on 127.0.0.1 that verifies every
// delivery's signature with the Standard Webhooks reference library and
// keeps the events it verified.
type hookReceiver struct {
	URL    string
	Secret string
	hook   *standardwebhooks.Webhook

	mu  sync.Mutex
	got []events.Event
	bad []string
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{Secret: webhook.NewSecret()}
	h, err := standardwebhooks.NewWebhook(rc.Secret)
	if err != nil {
		t.Fatal(err)
	}
	rc.hook = h
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL + "/hook"
	return rc
}

func (rc *hookReceiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := rc.hook.Verify(body, r.Header); err != nil {
		rc.bad = append(rc.bad, "signature: "+err.Error())
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	e, err := events.Parse(body)
	if err != nil {
		rc.bad = append(rc.bad, "event: "+err.Error())
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.got = append(rc.got, e)
	w.WriteHeader(http.StatusNoContent)
}

// events are the events verified so far, and the deliveries refused.
func (rc *hookReceiver) events() ([]events.Event, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]events.Event(nil), rc.got...), append([]string(nil), rc.bad...)
}

// ofType waits until n events of type typ arrived (failing after 10 s)
// and returns them.
func (rc *hookReceiver) ofType(t *testing.T, typ string, n int) []events.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, bad := rc.events()
		if len(bad) > 0 {
			t.Fatalf("deliveries refused: %q", bad)
		}
		var out []events.Event
		for _, e := range got {
			if e.Type == typ {
				out = append(out, e)
			}
		}
		if len(out) >= n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s event(s) after 10 s, want %d; got %+v", len(out), typ, n, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// eventsFile writes a subscriptions file for the receivers (by name) and
// returns its path.
func eventsFile(t *testing.T, dir string, subs map[string]string, secret string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("subscriptions:\n")
	for name, u := range subs {
		fmt.Fprintf(&b, "- name: %s\n  url: %s\n  secrets: [%s]\n  timeout: 1s\n", name, u, secret)
	}
	path := filepath.Join(dir, "events.yaml")
	writeAtomically(t, path, b.String())
	return path
}

// writeAtomically writes path through a temporary file renamed over it,
// as editors and Kubernetes do.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// eventsPolicy denies 1.1.0 and deprecates 1.0.0 of example.com/test/hello.
const eventsPolicy = `
provider "example.com/test/hello" {
  name = "hello"
  deny = ["1.1.0"]
  deprecated {
    versions = "1.0.0"
    message  = "1.0 is end of life: use 2.x"
  }
}`

// policedEventsProxy serves 1.0.0, 1.1.0 and 2.0.0-rc1 of
// example.com/test/hello under eventsPolicy, with the events file given.
func policedEventsProxy(t *testing.T, eventsFile string) *proxy {
	t.Helper()
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1"} {
		pushAttested(t, repo, v, nil)
	}
	return startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: mustPolicy(t, eventsPolicy),
		RegistryHostname: "example.com", PublicURL: "https://tofu.example.com", EventsFile: eventsFile})
}

// A denied version asked for 20 times is one policy.denied event, with
// the version's subject, the rule and the reason, signed; a deprecated
// version served is one policy.warned event; an allowed version none.
func TestEventsPolicyDeniedAndWarnedOnce(t *testing.T) {
	rc := newHookReceiver(t)
	p := policedEventsProxy(t, eventsFile(t, t.TempDir(), map[string]string{"all": rc.URL}, rc.Secret))

	for range 20 {
		p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, `denied by the policy's rule "hello"`)
		var d struct{ Packages map[string]any }
		p.getJSON(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 200, &d)
		p.getJSON(t, "/v1/providers/test/hello/2.0.0-rc1/download/linux/amd64", 200, &d)
	}
	denied := rc.ofType(t, events.TypePolicyDenied, 1)
	warned := rc.ofType(t, events.TypePolicyWarned, 1)
	time.Sleep(200 * time.Millisecond) // time for a duplicate to arrive, were one sent
	if all := received(rc, events.TypePolicyDenied, events.TypePolicyWarned); len(all) != 2 {
		t.Fatalf("%d decision events, want one denial and one warning: %+v", len(all), all)
	}
	d, ok := denied[0].Data.(events.PolicyDecision)
	if !ok {
		t.Fatalf("policy.denied data: %T", denied[0].Data)
	}
	if denied[0].Subject != "example.com/test/hello@1.1.0" || denied[0].Source != "https://tofu.example.com" ||
		d.Address != "example.com/test/hello" || d.Version != "1.1.0" || d.Rule != "hello" || !strings.Contains(d.Reason, "denied by the policy's rule") {
		t.Errorf("policy.denied: %+v, data %+v", denied[0], d)
	}
	w, ok := warned[0].Data.(events.PolicyDecision)
	if !ok {
		t.Fatalf("policy.warned data: %T", warned[0].Data)
	}
	if warned[0].Subject != "example.com/test/hello@1.0.0" || w.Rule != "hello" || w.Reason != "1.0 is end of life: use 2.x" {
		t.Errorf("policy.warned: %+v, data %+v", warned[0], w)
	}
}

// A subscription whose endpoint never answers slows no request: every
// denied request is answered while the event's delivery still waits.
func TestEventsDeadEndpointDoesNotSlowRequests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() { // accepts, never reads nor answers
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	secret := webhook.NewSecret()
	p := policedEventsProxy(t, eventsFile(t, t.TempDir(), map[string]string{"dead": "http://" + ln.Addr().String() + "/hook"}, secret))
	t.Cleanup(func() { // before the proxy's Close: its attempts then fail at once
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range 20 {
		p.wantError(t, fmt.Sprintf("/v1/mirror/example.com/test/hello/1.1.0.json?n=%d", i), 404, "denied")
	}
	// Every request was answered while the event's delivery was still
	// under way: its connection held by the endpoint, no delivery ended
	// (one ends only after its attempts' timeouts).
	accepted := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(conns)
	}
	for deadline := time.Now().Add(10 * time.Second); accepted() == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	if accepted() == 0 {
		t.Fatal("the event's delivery never reached the endpoint")
	}
	if ended := p.Server.events.deliveries(); len(ended) != 0 {
		t.Errorf("the requests waited for a delivery to end: %+v", ended)
	}
}

// An edit of the events file adding a subscription is applied: the next
// event goes to it too; an edit that does not parse is refused and
// logged, the subscriptions in force kept.
func TestEventsFileReloaded(t *testing.T) {
	first, second := newHookReceiver(t), newHookReceiver(t)
	dir := t.TempDir()
	path := eventsFile(t, dir, map[string]string{"first": first.URL}, first.Secret)
	p := policedEventsProxy(t, path)

	p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, "denied")
	first.ofType(t, events.TypePolicyDenied, 1)

	writeAtomically(t, path, "subscriptions: [{name: broken")
	waitForLog(t, p, "the events file was not reloaded")
	writeAtomically(t, path, fmt.Sprintf("subscriptions:\n- name: first\n  url: %s\n  secrets: [%s]\n- name: second\n  url: %s\n  secrets: [%s]\n",
		first.URL, first.Secret, second.URL, second.Secret))
	waitForLog(t, p, "the events file was reloaded")

	var d struct{ Packages map[string]any }
	p.getJSON(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 200, &d)
	got := second.ofType(t, events.TypePolicyWarned, 1)
	if got[0].Subject != "example.com/test/hello@1.0.0" {
		t.Errorf("the new subscription's event: %+v", got[0])
	}
	first.ofType(t, events.TypePolicyWarned, 1) // kept through the broken edit and the reload
	if all, _ := second.events(); len(all) != 1 {
		t.Errorf("the new subscription got %d events, want the one emitted after the reload: %+v", len(all), all)
	}
}

// waitForLog waits until the proxy logged msg.
func waitForLog(t *testing.T, p *proxy, msg string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.logs.String(), msg); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the logs:\n%s", msg, p.logs.String())
		}
	}
}

// A provider release pull-through stores is one version.ingested event,
// via pull-through, naming the repository and the digest stored.
func TestEventsPullThroughIngested(t *testing.T) {
	rc := newHookReceiver(t)
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "acme", Type: "widgets", Dir: signedRelease(t, "widgets", "1.9.0", 64, "linux_amd64"), Key: key}})
	dir := t.TempDir()
	base, _ := url.Parse(origin.ProvidersURL())
	pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, RegistryOrigin: "example.com", Client: originClient(t)}
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${hostname}/${namespace}/${type}"), PullThrough: &pt,
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}, RegistryHostname: "example.com",
		EventsFile: eventsFile(t, t.TempDir(), map[string]string{"all": rc.URL}, rc.Secret)})

	if r := p.get(t, strings.TrimPrefix(pullURL(t, p, "example.com/acme/widgets", "1.9.0", "linux_amd64"), p.URL)); r.Status != 200 {
		t.Fatalf("pulling 1.9.0: %d %s", r.Status, r.Body)
	}
	waitIdle(t, p)
	got := rc.ofType(t, events.TypeVersionIngested, 1)
	d, ok := got[0].Data.(events.VersionIngested)
	if !ok {
		t.Fatalf("version.ingested data: %T", got[0].Data)
	}
	if got[0].Subject != "example.com/acme/widgets@1.9.0" || got[0].Source != "https://example.com" || d.Kind != events.KindProvider ||
		d.Via != events.ViaPullThrough || !strings.HasPrefix(d.Digest, "sha256:") || !strings.HasSuffix(d.Repository, "/example.com/acme/widgets") {
		t.Errorf("version.ingested: %+v, data %+v", got[0], d)
	}
}

// With an events file, the page lists the last deliveries: their
// subscription, type, subject, outcome, status and attempts.
func TestEventsPageShowsDeliveries(t *testing.T) {
	rc := newHookReceiver(t)
	file := eventsFile(t, t.TempDir(), map[string]string{"security": rc.URL}, rc.Secret)
	quiet := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+t.TempDir()+"/${namespace}/${type}"), EventsFile: file})
	if page := string(quiet.get(t, "/").Body); !strings.Contains(page, `<section id="webhooks">`) || !strings.Contains(page, "No delivery has ended yet") {
		t.Fatalf("the page has no empty webhooks section:\n%s", page)
	}
	p := policedEventsProxy(t, file) // its policy's deprecation is sent at start
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, "denied")
	rc.ofType(t, events.TypePolicyDenied, 1)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		page := string(p.get(t, "/").Body)
		if strings.Contains(page, `id="webhook-deliveries"`) && strings.Contains(page, "policy.denied") { // the denial's delivery ended
			for _, want := range []string{"<td>security</td>", "<code>io.oci-tofu.policy.denied.v1</code>", "1.1.0", ">delivered<", "<td>204</td>", "<td>1</td></tr>"} {
				if !strings.Contains(page, want) {
					t.Errorf("the deliveries table lacks %q:\n%s", want, page)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no delivery on the page:\n%s", page)
		}
	}
	plain := policedEventsProxy(t, "")
	if page := string(plain.get(t, "/").Body); strings.Contains(page, `id="webhooks"`) {
		t.Error("the page has a webhooks section without an events file")
	}
}

// The decisions sent are remembered per policy generation, and bounded:
// a new generation, and a full set, forget them (each is then sent once
// more); a late decision of an older generation does not clear the set.
func TestDecisionsSentOncePerGeneration(t *testing.T) {
	var s decisionsSent
	k := func(i int) decisionKey {
		return decisionKey{kind: "provider", address: "example.com/test/hello", version: fmt.Sprintf("1.0.%d", i), rule: "hello", denied: true}
	}
	if !s.first(1, k(0), false) || s.first(1, k(0), false) {
		t.Fatal("a decision is not sent exactly once in its generation")
	}
	if allowed := (decisionKey{kind: "provider", address: "example.com/test/hello", version: "1.0.0", rule: "hello"}); !s.first(1, allowed, false) {
		t.Error("the same version's other outcome counts as sent")
	}
	if !s.first(2, k(0), false) {
		t.Error("a new generation does not send the decision again")
	}
	if s.first(1, k(0), false) {
		t.Error("a late decision of the older generation is sent again")
	}
	for i := 1; i < maxDecisionKeys; i++ {
		s.first(2, k(i), false)
	}
	if len(s.keys) != maxDecisionKeys {
		t.Fatalf("%d keys, want %d", len(s.keys), maxDecisionKeys)
	}
	if !s.first(2, k(1), false) || len(s.keys) != 1 {
		t.Errorf("a full set is not cleared (%d keys)", len(s.keys))
	}
	// Decisions on versions requests named: maxAskedKeys per generation.
	sent := 0
	for i := range 3 * maxAskedKeys {
		if s.first(2, k(100+i), true) {
			sent++
		}
	}
	if sent != maxAskedKeys || !s.first(2, k(0), false) {
		t.Errorf("%d asked decisions sent, want %d; a listed one after them must be", sent, maxAskedKeys)
	}
	if !s.first(3, k(100), true) {
		t.Error("a new generation does not send asked decisions again")
	}
}

// eventReason is a denial's reason, or an allowed version's warnings;
// an allowed version without a warning has no event.
func TestEventReason(t *testing.T) {
	for _, c := range []struct {
		d    policy.Decision
		want string
		ok   bool
	}{
		{policy.Decision{Allow: false, Reason: "denied"}, "denied", true},
		{policy.Decision{Allow: true, Reason: "allowed"}, "", false},
		{policy.Decision{Allow: true, Deprecated: "old"}, "old", true},
		{policy.Decision{Allow: true, VulnWarning: "CVE-1"}, "CVE-1", true},
		{policy.Decision{Allow: true, Deprecated: "old", VulnWarning: "CVE-1"}, "old; CVE-1", true},
	} {
		if got, ok := eventReason(c.d); got != c.want || ok != c.ok {
			t.Errorf("eventReason(%+v) = %q, %v; want %q, %v", c.d, got, ok, c.want, c.ok)
		}
	}
}

// A module version pull-through stores is one version.ingested event,
// via pull-through, with the module's address at its origin.
func TestEventsPullThroughModuleIngested(t *testing.T) {
	rc := newHookReceiver(t)
	files := testenv.StartFileSite(t, testenv.OriginOptions{})
	files.Put(t, "greeting.zip", moduleZip(t, "1.99.0"))
	o := testenv.StartModuleRegistry(t, testenv.OriginOptions{})
	o.Set("acme/greeting/aws", "1.99.0", testenv.ModuleAnswer{Location: "https://" + files.Host + "/greeting.zip"})
	dir, _ := moduleStore(t)
	tr, err := oci.NewTransport(oci.Options{CAFile: testenv.NewCA(t).CertFile})
	if err != nil {
		t.Fatal(err)
	}
	f, err := modulesource.New(modulesource.Config{Registry: o.Host, Sources: []string{files.Host}, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+dir+"/${hostname}/${namespace}/${name}/${system}")},
		PullThrough: &pullthrough.Options{Modules: []*modulesource.Fetcher{f}, Client: originClient(t)}, PublicURL: "https://tofu.example.com",
		Store:      store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1},
		EventsFile: eventsFile(t, t.TempDir(), map[string]string{"all": rc.URL}, rc.Secret)})
	if r := p.get(t, "/v1/origins/"+o.Host+"/modules/acme/greeting/aws/1.99.0/download"); r.Status != http.StatusNoContent && r.Status != http.StatusOK {
		t.Fatalf("downloading 1.99.0: %d %s", r.Status, r.Body)
	}
	waitIdle(t, p)
	got := rc.ofType(t, events.TypeVersionIngested, 1)
	d, ok := got[0].Data.(events.VersionIngested)
	if !ok {
		t.Fatalf("version.ingested data: %T", got[0].Data)
	}
	if got[0].Subject != o.Host+"/acme/greeting/aws@1.99.0" || d.Kind != events.KindModule || d.Via != events.ViaPullThrough ||
		!strings.HasPrefix(d.Digest, "sha256:") || !strings.HasSuffix(d.Repository, "/acme/greeting/aws") {
		t.Errorf("version.ingested: %+v, data %+v", got[0], d)
	}
}

// An events file that does not load stops New with its error, and a
// missing one too: serve does not start half-configured.
func TestEventsFileRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "events.yaml")
	writeAtomically(t, bad, "subscriptions:\n- name: x\n  url: http://example.com/hook\n  secrets: ["+webhook.NewSecret()+"]\n")
	for file, want := range map[string]string{bad: "http is allowed to 127.0.0.1", filepath.Join(dir, "missing.yaml"): "missing.yaml"} {
		_, err := New(Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), EventsFile: file})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New with %s: %v, want an error with %q", file, err, want)
		}
	}
}

// A release the origin signs with another key than the one the nearest
// earlier version stored was verified with is one origin.keys-changed
// event, naming the old and the new keys; a release signed with the same
// key, and the first version of a provider, send none.
func TestEventsOriginKeysChanged(t *testing.T) {
	rc := newHookReceiver(t)
	gocrypto, other := testenv.Testdata(t, "keys", "gocrypto-signer.asc"), testenv.Testdata(t, "keys", "other.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "acme", Type: "widgets", Dir: signedRelease(t, "widgets", "1.0.0", 64, "linux_amd64"), Key: gocrypto},
		{Namespace: "acme", Type: "widgets", Dir: signedRelease(t, "widgets", "1.1.0", 64, "linux_amd64"), Key: gocrypto},
		{Namespace: "acme", Type: "widgets", Dir: signedReleaseBy(t, "other-private.asc", time.Now(), "widgets", "2.0.0", 64, "linux_amd64"), Key: other},
	})
	dir := t.TempDir()
	base, _ := url.Parse(origin.ProvidersURL())
	pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, RegistryOrigin: "example.com", Client: originClient(t)}
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${hostname}/${namespace}/${type}"), PullThrough: &pt,
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}, RegistryHostname: "example.com",
		EventsFile: eventsFile(t, t.TempDir(), map[string]string{"all": rc.URL}, rc.Secret)})

	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		if r := p.get(t, strings.TrimPrefix(pullURL(t, p, "example.com/acme/widgets", v, "linux_amd64"), p.URL)); r.Status != 200 {
			t.Fatalf("pulling %s: %d %s", v, r.Status, r.Body)
		}
		waitIdle(t, p) // the pull and the check after it
	}
	rc.ofType(t, events.TypeVersionIngested, 3) // every check's event, if any, was emitted before the last pull's ingested event was delivered
	got := rc.ofType(t, events.TypeOriginKeysChanged, 1)
	if len(got) != 1 {
		t.Fatalf("%d origin.keys-changed events, want 1: %+v", len(got), got)
	}
	d, ok := got[0].Data.(events.OriginKeysChanged)
	if !ok {
		t.Fatalf("origin.keys-changed data: %T", got[0].Data)
	}
	oldID, newID := keyIDOf(t, gocrypto), keyIDOf(t, other)
	if got[0].Subject != "example.com/acme/widgets" || d.Address != "example.com/acme/widgets" ||
		!slices.Equal(d.OldKeyIDs, []string{oldID}) || !slices.Equal(d.NewKeyIDs, []string{newID}) {
		t.Errorf("origin.keys-changed: %+v, data %+v; want old [%s], new [%s]", got[0], d, oldID, newID)
	}
}

// keyIDOf is the key ID of the armored public key in file.
func keyIDOf(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	kr, err := pgp.ReadKeyring(file, b)
	if err != nil {
		t.Fatal(err)
	}
	return pgp.KeyID(kr.Entities[0].PrimaryKey.KeyId)
}

// A decision's event ID is the same in every replica that makes it on
// the same day (one event a fleet's shared claimer delivers once), and
// another for another client, rule, outcome or day.
func TestDecisionEventIDs(t *testing.T) {
	day := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	key := decisionKey{kind: "provider", address: "example.com/test/hello", version: "1.1.0", rule: "hello-policy", denied: true}
	data := events.PolicyDecision{Denied: true, Address: key.address, Version: key.version, Rule: key.rule, Reason: "denied"}
	id := func(k decisionKey, d events.PolicyDecision, at time.Time) string {
		return decisionEvent("https://a.example.com", k, d, at).ID
	}
	first := id(key, data, day)
	if again := decisionEvent("https://b.example.com", key, data, day.Add(13*time.Hour)).ID; again != first {
		t.Errorf("another replica, the same day: id %s, want %s", again, first)
	}
	withClient := key
	withClient.client = "ci\x00oidc\x00repo:acme/app"
	otherRule := key
	otherRule.rule = "other"
	warned := data
	warned.Denied = false
	for name, other := range map[string]string{
		"another client": id(withClient, data, day),
		"another rule":   id(otherRule, data, day),
		"warned":         id(key, warned, day),
		"the next day":   id(key, data, day.Add(24*time.Hour)),
	} {
		if other == first {
			t.Errorf("%s: the same id %s", name, first)
		}
	}
}
