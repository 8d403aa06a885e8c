package proxy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/policyfile"
)

// reloadPolicy deprecates 1.0.0 and revokes 1.1.0 of
// example.com/test/hello; more adds lines to its rule.
func reloadPolicy(more string) string {
	return `provider "example.com/test/hello" {
  name = "hello"
  deprecated {
    versions = "1.0.0"
    message  = "1.0 is end of life"
  }
  revoked {
    versions = "1.1.0"
    message  = "1.1.0 leaks credentials"
  }
` + more + "}\n"
}

// gotEvent is an event as the tests compare it: type, subject, ID and
// data.
type gotEvent struct {
	Type, Subject, ID string
	Data              events.Data
}

// received are rc's events of the types given, as gotEvents, sorted by
// type and subject.
func received(rc *hookReceiver, types ...string) []gotEvent {
	all, _ := rc.events()
	var out []gotEvent
	for _, e := range all {
		if slices.Contains(types, e.Type) {
			out = append(out, gotEvent{e.Type, e.Subject, e.ID, e.Data})
		}
	}
	slices.SortFunc(out, func(a, b gotEvent) int { return strings.Compare(a.Type+" "+a.Subject, b.Type+" "+b.Subject) })
	return out
}

// standingEvent is the event expected of a version a rule deprecates or
// revokes, with its stable ID.
func standingEvent(revoked bool, version, message string) gotEvent {
	typ := events.TypePolicyDeprecated
	if revoked {
		typ = events.TypePolicyRevoked
	}
	subject := "example.com/test/hello@" + version
	return gotEvent{typ, subject, events.StableID(typ, subject, "hello"),
		events.PolicyStanding{Revoked: revoked, Address: "example.com/test/hello", Version: version, Rule: "hello", Reason: message}}
}

// waitForPasses waits until the proxy logged n ended passes of what
// ("policy", "vulnerabilities").
func waitForPasses(t *testing.T, p *proxy, what string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); strings.Count(p.logs.String(), `what=`+what) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d %s passes in the logs:\n%s", n, what, p.logs.String())
		}
	}
}

// wantEvents waits until rc has received want (of want's types and
// those given, sorted as received sorts them), then that nothing more
// arrives for a while.
func wantEvents(t *testing.T, rc *hookReceiver, want []gotEvent, types ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(types, w.Type) {
			types = append(types, w.Type)
		}
	}
	equal := func() bool {
		got := received(rc, types...)
		return fmt.Sprint(got) == fmt.Sprint(want)
	}
	for deadline := time.Now().Add(10 * time.Second); !equal(); time.Sleep(20 * time.Millisecond) {
		if _, bad := rc.events(); len(bad) > 0 {
			t.Fatalf("deliveries refused: %q", bad)
		}
		if time.Now().After(deadline) {
			t.Fatalf("events:\n%+v\nwant:\n%+v", received(rc, types...), want)
		}
	}
	time.Sleep(300 * time.Millisecond) // time for one more to arrive, were it sent
	if !equal() {
		t.Fatalf("events after a while:\n%+v\nwant:\n%+v", received(rc, types...), want)
	}
}

// Served from a real Distribution, a policy in force at start sends
// policy.deprecated and policy.revoked for each stored version it
// deprecates or revokes, signed, with the stable ID of (type,
// address@version, rule); a reload with no change in what it decides
// sends nothing; one deprecating one more version sends that one alone.
func TestEventsPolicyStandingOnReload(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := registryRepo(t, reg, "providers/test/hello")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1"} {
		pushAttested(t, repo, v, nil)
	}
	file := filepath.Join(t.TempDir(), "policy.hcl")
	writeAtomically(t, file, reloadPolicy(""))
	pf, err := policyfile.Open(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := newHookReceiver(t)
	p := startProxy(t, Options{Client: registryClient(t, reg), ProviderMappings: mustMapping(t, reg.Host+"/providers/${namespace}/${type}"),
		RegistryHostname: "example.com", Policy: pf.Live(), PolicyStatus: pf.Status,
		EventsFile: eventsFile(t, t.TempDir(), map[string]string{"all": rc.URL}, rc.Secret)})

	want := []gotEvent{standingEvent(false, "1.0.0", "1.0 is end of life"), standingEvent(true, "1.1.0", "1.1.0 leaks credentials")}
	wantEvents(t, rc, want)

	writeAtomically(t, file, reloadPolicy("  # the same decisions\n"))
	if err := pf.Reload("test"); err != nil {
		t.Fatal(err)
	}
	waitForPasses(t, p, "policy", 2)
	wantEvents(t, rc, want)

	writeAtomically(t, file, reloadPolicy(`  deprecated {
    versions = "2.0.0-rc1"
    message  = "2.0.0-rc1 is slow"
  }
`))
	if err := pf.Reload("test"); err != nil {
		t.Fatal(err)
	}
	waitForPasses(t, p, "policy", 3)
	want = []gotEvent{want[0], standingEvent(false, "2.0.0-rc1", "2.0.0-rc1 is slow"), want[1]}
	wantEvents(t, rc, want)
}

// A pass sends at most its limit, in the order of what is stored, and
// counts the rest; a version deprecated and revoked by the same rule is
// revoked; a version old deprecated by another rule is new.
func TestStandingEventsBounded(t *testing.T) {
	parse := func(src string) *policy.Policy {
		p, err := policy.Parse([]byte(src), "policy.hcl")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cur := parse(reloadPolicy(`  deprecated {
    message = "every version"
  }
`))
	addrs := []heldAddress{{names.KindProvider, "example.com/test/hello"}}
	var vs []names.Version
	for i := range 10 {
		vs = append(vs, names.MustParseVersion(fmt.Sprintf("3.0.%d", i)))
	}
	out, unsent := standingEvents(nil, cur, addrs, [][]names.Version{vs}, 4)
	if len(out) != 4 || unsent != 6 || out[0].Version != "3.0.0" || out[3].Version != "3.0.3" || out[0].Reason != "every version" {
		t.Errorf("limited to 4: %+v, %d unsent", out, unsent)
	}
	if out, unsent := standingEvents(cur, cur, addrs, [][]names.Version{vs}, 4); len(out) != 0 || unsent != 0 {
		t.Errorf("the same policy again: %+v, %d unsent", out, unsent)
	}
	both := []names.Version{names.MustParseVersion("1.1.0")}
	if out, _ := standingEvents(nil, cur, addrs, [][]names.Version{both}, 4); len(out) != 1 || !out[0].Revoked {
		t.Errorf("a deprecated and revoked version: %+v, want revoked", out)
	}
	renamed := parse(strings.Replace(reloadPolicy(""), `name = "hello"`, `name = "renamed"`, 1))
	one := []names.Version{names.MustParseVersion("1.0.0")}
	if out, _ := standingEvents(cur, renamed, addrs, [][]names.Version{one}, 4); len(out) != 1 || out[0].Rule != "renamed" {
		t.Errorf("a deprecation by another rule: %+v, want it sent", out)
	}
}

// Served from a real Distribution, a vulnerability database put in
// force that newly affects a stored version sends one
// vulnerability.detected naming the new IDs, with the stable ID of
// (type, address@version, IDs); the database at start sends none, and a
// reload that finds nothing new sends nothing.
func TestEventsVulnerabilityDetectedOnReload(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := registryRepo(t, reg, "providers/test/hello")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		pushAttested(t, repo, v, nil)
	}
	attachSBOMs(t, repo, "1.0.0", "go1.27.5", sbom.Module{Path: "golang.org/x/text", Version: "v0.3.7", Sum: "h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk="})
	attachSBOMs(t, repo, "1.1.0", "go1.27.5")
	dbDir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		path := filepath.Join(dbDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		writeAtomically(t, path, content)
	}
	write("index/db.json", `{"modified": "2026-11-01T00:00:00Z"}`)
	write("index/modules.json", `[]`)
	db, err := vulns.OpenLive(dbDir, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := newHookReceiver(t)
	p := startProxy(t, Options{Client: registryClient(t, reg), ProviderMappings: mustMapping(t, reg.Host+"/providers/${namespace}/${type}"),
		RegistryHostname: "example.com", VulnDB: db, EventsFile: eventsFile(t, t.TempDir(), map[string]string{"all": rc.URL}, rc.Secret)})

	entry, err := os.ReadFile(filepath.Join(vulnFixtureDB, "ID", "GO-2022-1059.json"))
	if err != nil {
		t.Fatal(err)
	}
	write("ID/GO-2022-1059.json", string(entry))
	write("index/modules.json", `[{"path": "golang.org/x/text", "vulns": [{"id": "GO-2022-1059", "modified": "0001-01-01T00:00:00Z", "fixed": "0.3.8"}]}]`)
	write("index/db.json", `{"modified": "2026-11-05T23:49:57Z"}`)
	if !db.Check() {
		t.Fatal("the database was not reloaded")
	}
	const subject = "example.com/test/hello@1.0.0"
	want := []gotEvent{{events.TypeVulnerabilityDetected, subject, events.StableID(events.TypeVulnerabilityDetected, subject, "GO-2022-1059"),
		events.VulnerabilityDetected{Address: "example.com/test/hello", Version: "1.0.0", IDs: []string{"GO-2022-1059"}}}}
	wantEvents(t, rc, want)

	write("index/db.json", `{"modified": "2026-11-06T00:00:00Z"}`) // a new database, finding nothing new
	if !db.Check() {
		t.Fatal("the database was not reloaded")
	}
	waitForPasses(t, p, "vulnerabilities", 2)
	wantEvents(t, rc, want)
}

// Audit events lost (a full disk) send audit.lost, with the count lost
// since the last one, at most once per interval: two bursts of losses in
// two intervals are two events whose counts add up to the trail's; no
// loss, no event.
func TestEventsAuditLost(t *testing.T) {
	defer func(was time.Duration) { auditLostEvery = was }(auditLostEvery)
	auditLostEvery = 200 * time.Millisecond
	reg := testenv.StartRegistry(t)
	pushAttested(t, registryRepo(t, reg, "providers/test/hello"), "1.0.0", nil)
	trail, err := audit.Open(audit.Options{Path: "/dev/full", FlushEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer trail.Close()
	rc := newHookReceiver(t)
	p := startProxy(t, Options{Client: registryClient(t, reg), ProviderMappings: mustMapping(t, reg.Host+"/providers/${namespace}/${type}"),
		Audit: trail, EventsFile: eventsFile(t, t.TempDir(), map[string]string{"all": rc.URL}, rc.Secret)})
	var doc struct {
		Archives map[string]struct{ URL string } `json:"archives"`
	}
	r := p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &doc)
	download := func(n int) {
		for range n {
			if got := p.get(t, resolve(t, r.URL, doc.Archives["linux_amd64"].URL)); got.Status != 200 {
				t.Fatalf("download with a full audit disk: %d", got.Status)
			}
		}
		trail.Flush()
	}
	sum := func() (n int64, count int) {
		for _, e := range received(rc, events.TypeAuditLost) {
			n += e.Data.(events.AuditLost).Count
			count++
		}
		return n, count
	}
	wait := func(lost int64) int {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if n, count := sum(); n == lost {
				return count
			} else if time.Now().After(deadline) {
				t.Fatalf("audit.lost events count %d lost, want %d", n, lost)
			}
		}
	}
	download(3)
	if trail.Lost() != 3 {
		t.Fatalf("the trail lost %d, want 3", trail.Lost())
	}
	first := wait(3)
	time.Sleep(3 * auditLostEvery)
	download(2)
	if n := wait(5); n != first+1 {
		t.Errorf("%d audit.lost events after two bursts, want %d", n, first+1)
	}
	time.Sleep(3 * auditLostEvery)
	if n, count := sum(); n != 5 || count != first+1 {
		t.Errorf("without a loss: %d events counting %d, want none more", count, n)
	}
	for _, e := range received(rc, events.TypeAuditLost) {
		if e.Subject != "" {
			t.Errorf("audit.lost with a subject: %+v", e)
		}
	}
}

// A request refused a version the policy denies sends policy.denied
// naming its client (name and identity, never the token), once per
// client per policy generation, beside the policy's own decision (no
// client); a second client refused the same shared, cached denial gets
// its own event, and neither event names the other client.
func TestEventsPolicyDeniedNamesTheClient(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := registryRepo(t, reg, "providers/test/hello")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		pushAttested(t, repo, v, nil)
	}
	const tokenA, tokenB = "token-of-client-a", "token-of-client-b"
	rc := newHookReceiver(t)
	p := startProxy(t, Options{Client: registryClient(t, reg), ProviderMappings: mustMapping(t, reg.Host+"/providers/${namespace}/${type}"),
		RegistryHostname: "example.com", EventsFile: eventsFile(t, t.TempDir(), map[string]string{"all": rc.URL}, rc.Secret),
		Policy: mustPolicy(t, fmt.Sprintf(`
client "a" {
  tokens    = [%q]
  providers = ["example.com/test/*"]
}
client "b" {
  tokens    = [%q]
  providers = ["example.com/test/*"]
}
provider "example.com/test/hello" {
  name = "hello"
  deny = ["1.1.0"]
}`, policy.TokenHash(tokenA), policy.TokenHash(tokenB)))})
	ask := func(token string) {
		t.Helper()
		r := p.do(t, "GET", "/v1/mirror/example.com/test/hello/1.1.0.json", map[string]string{"Authorization": "Bearer " + token})
		if r.Status != 404 || !strings.Contains(string(r.Body), "denied by the policy") {
			t.Fatalf("1.1.0 asked with a token: %d %s", r.Status, r.Body)
		}
	}
	for range 5 {
		ask(tokenA)
	}
	for range 5 {
		ask(tokenB)
	}
	const subject = "example.com/test/hello@1.1.0"
	reason := "example.com/test/hello 1.1.0 is denied by the policy's rule \"hello\""
	decision := func(c *events.Client) events.PolicyDecision {
		return events.PolicyDecision{Denied: true, Address: "example.com/test/hello", Version: "1.1.0", Rule: "hello", Reason: reason, Client: c}
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(received(rc, events.TypePolicyDenied)) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // time for a duplicate to arrive, were one sent
	var got []string
	for _, e := range received(rc, events.TypePolicyDenied) {
		if e.Subject != subject {
			t.Errorf("policy.denied subject %q", e.Subject)
		}
		got = append(got, asJSON(t, e.Data))
	}
	slices.Sort(got)
	want := []string{asJSON(t, decision(nil)), asJSON(t, decision(&events.Client{Name: "a", Identity: "client"})),
		asJSON(t, decision(&events.Client{Name: "b", Identity: "client"}))}
	slices.Sort(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("policy.denied events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	all, _ := rc.events()
	for _, e := range all {
		if b, _ := e.MarshalJSON(); strings.Contains(string(b), tokenA) || strings.Contains(string(b), tokenB) {
			t.Errorf("an event carries a token: %s", b)
		}
	}
}

// asJSON is v in JSON.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
