package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/logins"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// teamRegistry is Distribution with token auth whose token server grants
// alice what is under team-a/ and bob what is under team-b/ (of modules/
// and providers/), and the proxy everything.
func teamRegistry(t *testing.T) *testenv.Registry {
	t.Helper()
	reg := testenv.StartTokenRegistry(t, "proxy", "proxy-Pa55")
	reg.Token.AddUser("alice", "alice-Pa55", "modules/team-a/", "providers/team-a/")
	reg.Token.AddUser("bob", "bob-Pa55", "modules/team-b/", "providers/team-b/")
	return reg
}

// proxyClient reaches reg with the proxy's own credential.
func proxyClient(t *testing.T, reg *testenv.Registry) *oci.Client {
	t.Helper()
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, Username: reg.Username, Password: reg.Password})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pushTo pushes a to name:tag on reg with the proxy's credential.
func pushTo(t *testing.T, reg *testenv.Registry, name string, a *oci.Artifact, tag string) {
	t.Helper()
	repo, err := proxyClient(t, reg).Open(oci.Reference{Registry: reg.Host, Repository: name})
	if err != nil {
		t.Fatal(err)
	}
	push(t, repo, a, tag)
}

// bearer is the Authorization header of a registry credential, as
// registryDecidesProxy is a proxy serving reg's providers/NAMESPACE/TYPE
// with --registry-decides, reading with the proxy's own credential, and
// the rest of opts.
func registryDecidesProxy(t *testing.T, reg *testenv.Registry, opts Options) *proxy {
	t.Helper()
	opts.Client = proxyClient(t, reg)
	opts.ProviderMappings = mustMapping(t, reg.Host+"/providers/${namespace}/${type}")
	opts.RegistryDecides = true
	return startProxy(t, opts)
}

// OpenTofu 1.12 sends it (and so is handed direct archive locations).
func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token, "User-Agent": "OpenTofu/1.12.6"}
}

// A module held only under team-b/, with the templates team-a/… then
// team-b/…: the registry decides on the repository that holds it, not on
// the first template's, and a 404 there (team-a's repository does not
// exist) confirms nothing. alice, who reads team-a/ only, gets 404 for
// the listing, the download and the archive; bob, who reads team-b/,
// gets the module.
func TestRegistryDecidesOnTheModuleRepositoryServed(t *testing.T) {
	reg := teamRegistry(t)
	z := moduleZip(t, "team-b's 1.0.0")
	pushTo(t, reg, "modules/team-b/acme/network/aws", moduleArtifact(t, z), "1.0.0")
	p := startProxy(t, Options{
		Client: proxyClient(t, reg),
		ModuleMappings: []*repotemplate.Template{
			mustModuleTemplate(t, reg.Host+"/modules/team-a/${namespace}/${name}/${system}"),
			mustModuleTemplate(t, reg.Host+"/modules/team-b/${namespace}/${name}/${system}"),
		},
		RegistryDecides: true,
	})
	alice, bob := bearer("alice:alice-Pa55"), bearer("bob:bob-Pa55")
	versions, download := "/v1/modules/acme/network/aws/versions", "/v1/modules/acme/network/aws/1.0.0/download"
	for _, path := range []string{versions, download} {
		if got := p.do(t, http.MethodGet, path, alice); got.Status != http.StatusNotFound {
			t.Errorf("alice %s: %d %.200s", path, got.Status, got.Body)
		}
	}
	r := p.do(t, http.MethodGet, versions, bob)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"1.0.0"`) {
		t.Fatalf("bob's versions: %d %s", r.Status, r.Body)
	}
	r = p.do(t, http.MethodGet, download, bob)
	var loc struct{ Location string }
	if r.Status != 200 || json.Unmarshal(r.Body, &loc) != nil || loc.Location == "" {
		t.Fatalf("bob's download: %d %s", r.Status, r.Body)
	}
	if got := p.do(t, http.MethodGet, loc.Location, bob); got.Status != 200 || !bytes.Equal(got.Body, z) {
		t.Fatalf("bob's archive: %d", got.Status)
	}
	for _, path := range []string{versions, download, loc.Location} {
		if got := p.do(t, http.MethodGet, path, alice); got.Status != http.StatusNotFound || bytes.Equal(got.Body, z) {
			t.Errorf("alice %s after bob warmed the caches: %d %.200s", path, got.Status, got.Body)
		}
	}
}

// The same with two provider mappings: a provider held only under
// team-b/ is bob's, not alice's.
func TestRegistryDecidesOnTheProviderRepositoryServed(t *testing.T) {
	reg := teamRegistry(t)
	pushTo(t, reg, "providers/team-b/test/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	p := startProxy(t, Options{
		Client: proxyClient(t, reg),
		ProviderMappings: []store.ProviderMapping{
			{Template: mustTemplate(t, reg.Host+"/providers/team-a/${namespace}/${type}"), Label: "team-a"},
			{Template: mustTemplate(t, reg.Host+"/providers/team-b/${namespace}/${type}"), Label: "team-b"},
		},
		RegistryDecides: true,
	})
	alice, bob := bearer("alice:alice-Pa55"), bearer("bob:bob-Pa55")
	index, version := "/v1/mirror/example.com/test/hello/index.json", "/v1/mirror/example.com/test/hello/1.0.0.json"
	if r := p.do(t, http.MethodGet, index, alice); r.Status != http.StatusNotFound {
		t.Errorf("alice %s: %d %.200s", index, r.Status, r.Body)
	}
	var mv struct {
		Archives map[string]struct{ URL string } `json:"archives"`
	}
	for _, path := range []string{index, version} {
		r := p.do(t, http.MethodGet, path, bob)
		if r.Status != 200 {
			t.Fatalf("bob %s: %d %s", path, r.Status, r.Body)
		}
		json.Unmarshal(r.Body, &mv)
	}
	archive := resolve(t, mustURL(t, p.URL+version), mv.Archives["linux_amd64"].URL)
	archive, _, _ = strings.Cut(archive, "?")
	if r := p.do(t, http.MethodGet, archive, bob); r.Status != 200 {
		t.Fatalf("bob's archive with his token: %d %s", r.Status, r.Body)
	}
	for _, path := range []string{index, version, "/v1/providers/test/hello/versions", "/v1/providers/test/hello/1.0.0/download/linux/amd64", archive} {
		if r := p.do(t, http.MethodGet, path, alice); r.Status != http.StatusNotFound {
			t.Errorf("alice %s after bob warmed the caches: %d %.200s", path, r.Status, r.Body)
		}
	}
}

// clientFrom is an HTTP client of p whose connections come from the
// loopback address ip (127.0.0.2: another remote address to the proxy).
func (p *proxy) clientFrom(t *testing.T, ip string) *proxy {
	t.Helper()
	tr := p.Client.Transport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext
	c := *p.Client
	c.Transport = tr
	q := *p
	q.Client = &c
	return &q
}

// failedLogins counts the token requests for user the token server
// refused.
func failedLogins(reg *testenv.Registry, user string) int {
	n := 0
	for _, r := range reg.Token.Requests() {
		if r.User == user && !r.Granted {
			n++
		}
	}
	return n
}

// 200 password guesses for two users through the proxy reach the
// registry a bounded number of times (a first refusal cools the user
// name down: every password then gets the same 404 without the registry
// being asked, and the guessing address is limited, 429, for credentials
// the registry has not accepted). At the guessing address, a guessed
// user's credential the registry accepted before gets a guess's answer
// too (no quick yes tells a guess right); elsewhere it keeps working, as
// does another user's from the guessing address and a new user from
// another address. The attacked user's right password gets the wrong
// one's 404 during the cool-down, and works after it.
func TestRegistryLoginsAreBounded(t *testing.T) {
	reg := teamRegistry(t)
	reg.Token.AddUser("carol", "carol-Pa55", "providers/team-a/")
	reg.Token.AddUser("dave", "dave-Pa55", "providers/team-a/")
	pushTo(t, reg, "providers/team-a/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	pushTo(t, reg, "providers/team-b/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	cooldown := 3 * time.Second
	p := registryDecidesProxy(t, reg, Options{
		RegistryLogins: logins.Limits{PerAddressRate: 0.5, PerAddressBurst: 5, Cooldown: cooldown},
	})
	index := func(team string) string { return "/v1/mirror/example.com/" + team + "/hello/index.json" }
	other := p.clientFrom(t, "127.0.0.2")
	get := func(via *proxy, team, token string) response {
		return via.do(t, http.MethodGet, index(team), bearer(token))
	}
	for _, token := range []string{"alice:alice-Pa55", "dave:dave-Pa55"} {
		if r := get(p, "team-a", token); r.Status != 200 {
			t.Fatalf("%s before the attack: %d %s", token, r.Status, r.Body)
		}
	}
	statuses := map[int]int{}
	start := time.Now()
	for i := range 200 {
		user := []string{"carol", "dave"}[i%2]
		statuses[get(p, "team-a", fmt.Sprintf("%s:guess-%d", user, i)).Status]++
	}
	// One login each, and one more each time the cool-down ended while
	// the guessing went on (a loaded machine).
	most := 1 + int(time.Since(start)/cooldown)
	for _, user := range []string{"carol", "dave"} {
		if n := failedLogins(reg, user); n < 1 || n > most {
			t.Errorf("100 guesses for %s made %d failed registry logins, want 1 to %d", user, n, most)
		}
	}
	if statuses[200] > 0 || statuses[http.StatusNotFound]+statuses[http.StatusTooManyRequests] != 200 {
		t.Errorf("the guesses' answers: %v, want only 404 and 429", statuses)
	}
	right, wrong := get(p, "team-a", "dave:dave-Pa55"), get(p, "team-a", "dave:one-more-guess")
	if right.Status == 200 || right.Status != wrong.Status || !bytes.Equal(right.Body, wrong.Body) {
		t.Errorf("dave's accepted credential at the guessing address: %d %s; a guess: %d %s", right.Status, right.Body, wrong.Status, wrong.Body)
	}
	for _, c := range []struct {
		via         *proxy
		team, token string
	}{{p, "team-a", "alice:alice-Pa55"}, {other, "team-a", "dave:dave-Pa55"}, {other, "team-b", "bob:bob-Pa55"}} {
		if r := get(c.via, c.team, c.token); r.Status != 200 {
			t.Errorf("%s during the attack: %d %s", c.token, r.Status, r.Body)
		}
	}
	wrong = get(other, "team-a", "carol:another-guess") // refused: the cool-down starts again
	right = get(other, "team-a", "carol:carol-Pa55")
	if right.Status != http.StatusNotFound || !bytes.Equal(right.Body, wrong.Body) {
		t.Errorf("carol's right password during the cool-down: %d %s; a wrong one: %d %s", right.Status, right.Body, wrong.Status, wrong.Body)
	}
	before := failedLogins(reg, "carol")
	time.Sleep(cooldown + 100*time.Millisecond)
	if r := get(other, "team-a", "carol:carol-Pa55"); r.Status != 200 {
		t.Errorf("carol's right password after the cool-down: %d %s", r.Status, r.Body)
	}
	if n := failedLogins(reg, "carol"); n != before {
		t.Errorf("guesses during the cool-down reached the registry: %d failed logins, then %d", before, n)
	}
}

// Many guesses at once from one address reach the registry at most as
// often as the address's burst allows.
func TestRegistryLoginsAreBoundedConcurrently(t *testing.T) {
	reg := teamRegistry(t)
	pushTo(t, reg, "providers/team-a/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	p := registryDecidesProxy(t, reg, Options{
		RegistryLogins: logins.Limits{PerAddressRate: 0.1, PerAddressBurst: 5},
	})
	var wg sync.WaitGroup
	var ok atomic.Int64
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/index.json", bearer(fmt.Sprintf("alice:guess-%d", i))); r.Status == 200 {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := failedLogins(reg, "alice"); n < 1 || n > 5 || ok.Load() > 0 {
		t.Errorf("200 concurrent guesses: %d failed registry logins (want 1 to 5), %d answered 200", n, ok.Load())
	}
}

// The audit trail tells a registry user the registry accepted
// (identity registry) from a name a token merely claims
// (registry-unverified): a wrong password, a guess during a cool-down.
func TestRegistryUsersInTheAuditTrail(t *testing.T) {
	reg := teamRegistry(t)
	pushTo(t, reg, "providers/team-a/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	pushTo(t, reg, "providers/team-b/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	trail, path := openTrail(t)
	p := registryDecidesProxy(t, reg, Options{
		Audit: trail,
	})
	index := func(team string) string { return "/v1/mirror/example.com/" + team + "/hello/index.json" }
	for _, c := range []struct{ token, team string }{
		{"alice:alice-Pa55", "team-b"}, // refused by the registry: alice is known
		{"mallory:guess-1", "team-a"},  // no such user
		{"bob:guess-1", "team-b"},      // a wrong password
		{"bob:guess-2", "team-b"},      // during bob's cool-down
	} {
		if r := p.do(t, http.MethodGet, index(c.team), bearer(c.token)); r.Status != http.StatusNotFound {
			t.Fatalf("%s on %s: %d %s", c.token, c.team, r.Status, r.Body)
		}
	}
	want := map[string]string{"alice": audit.IdentityRegistry, "mallory": audit.IdentityRegistryUnverified, "bob": audit.IdentityRegistryUnverified}
	got := map[string][]string{}
	for _, ev := range readAudit(t, trail, path) {
		if ev.Outcome == audit.OutcomeRefused {
			got[ev.Client] = append(got[ev.Client], ev.Identity)
		}
	}
	for user, identity := range want {
		if len(got[user]) == 0 {
			t.Errorf("no refusal of %s recorded: %v", user, got)
		}
		for _, id := range got[user] {
			if id != identity {
				t.Errorf("%s refused as identity %q, want %q", user, id, identity)
			}
		}
	}
}

// An address that keeps guessing at a user keeps that user's known
// credential out from there, past the cool-down after its first
// guesses, until it has stopped guessing for a cool-down.
func TestGuessingKeepsAKnownCredentialOutUntilItStops(t *testing.T) {
	reg := teamRegistry(t)
	pushTo(t, reg, "providers/team-a/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	cooldown := 2 * time.Second
	p := registryDecidesProxy(t, reg, Options{
		RegistryLogins: logins.Limits{Cooldown: cooldown},
	})
	get := func(token string) int {
		return p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/index.json", bearer(token)).Status
	}
	if code := get("alice:alice-Pa55"); code != 200 {
		t.Fatalf("alice: %d", code)
	}
	for end, i := time.Now().Add(5*cooldown/2), 0; time.Now().Before(end); i++ {
		get(fmt.Sprintf("alice:guess-%d", i))
		time.Sleep(cooldown / 5)
	}
	if code := get("alice:alice-Pa55"); code == 200 {
		t.Error("alice's known credential from an address still guessing at her: 200")
	}
	time.Sleep(cooldown + 100*time.Millisecond)
	if code := get("alice:alice-Pa55"); code != 200 {
		t.Errorf("alice's known credential once the guessing stopped for a cool-down: %d", code)
	}
}
