package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// Clients of the policy file read what their patterns name, by every
// protocol and URL, and get for anything else what an absent artifact
// gets, whether or not it exists; a cached document never reaches a
// client outside its scope; an --auth-token-file token reads everything.
func TestClientsReadOnlyTheirScope(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("team-a", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	push(t, open("team-b", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	mdir, mopen := moduleStore(t)
	push(t, mopen("team-a", "net", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), names.TagForVersion(mustVersion(t, "1.0.0")))
	push(t, mopen("team-b", "net", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), names.TagForVersion(mustVersion(t, "1.0.0")))
	const tokenA, tokenB, admin = "token-of-team-a", "token-of-team-b", "operator-token"
	p := startProxy(t, Options{
		ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		ModuleMappings:   []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")},
		RegistryHostname: "example.com",
		AuthTokens:       []string{admin},
		Policy: mustPolicy(t, fmt.Sprintf(`
client "team-a" {
  tokens    = [%q]
  providers = ["example.com/team-a/*"]
  modules   = ["*/team-a/*/*"]
}
client "team-b" {
  tokens    = [%q]
  providers = ["example.com/team-b/*"]
  expires   = %q
}
`, policy.TokenHash(tokenA), policy.TokenHash(tokenB), time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))),
	})
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	status := func(path, token string) (int, string) {
		r := p.do(t, http.MethodGet, path, as(token))
		return r.Status, string(r.Body)
	}
	// The operator's token warms every cache, team-b's documents included.
	for _, path := range []string{"/v1/mirror/example.com/team-b/hello/index.json", "/v1/mirror/example.com/team-b/hello/1.0.0.json",
		"/v1/providers/team-b/hello/versions", "/v1/modules/team-b/net/aws/versions", "/v1/mirror/example.com/team-a/hello/1.0.0.json"} {
		if code, body := status(path, admin); code != http.StatusOK {
			t.Fatalf("operator %s: %d %s", path, code, body)
		}
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{"/v1/mirror/example.com/team-a/hello/index.json", 200},
		{"/v1/mirror/example.com/team-a/hello/1.0.0.json", 200},
		{"/v1/providers/team-a/hello/versions", 200},
		{"/v1/providers/team-a/hello/1.0.0/download/linux/amd64", 200},
		{"/v1/modules/team-a/net/aws/versions", 200},
		{"/v1/modules/team-a/net/aws/1.0.0/download", 204},
		{"/v1/mirror/example.com/team-b/hello/index.json", 404},
		{"/v1/mirror/example.com/team-b/hello/1.0.0.json", 404},
		{"/v1/providers/team-b/hello/versions", 404},
		{"/v1/providers/team-b/hello/1.0.0/download/linux/amd64", 404},
		{"/v1/modules/team-b/net/aws/versions", 404},
		{"/v1/modules/team-b/net/aws/1.0.0/download", 404},
		{"/v1/mirror/example.com/team-b/absent/index.json", 404},
	} {
		code, body := status(c.path, tokenA)
		if code != c.want {
			t.Errorf("team-a %s: %d %s, want %d", c.path, code, body, c.want)
		}
		if c.want == 404 && !strings.Contains(body, "not within the scope of client team-a") {
			t.Errorf("team-a %s: %s", c.path, body)
		}
	}
	// What exists and what does not are refused alike.
	_, exists := status("/v1/mirror/example.com/team-b/hello/index.json", tokenA)
	_, absent := status("/v1/mirror/example.com/team-b/absent/index.json", tokenA)
	if strings.ReplaceAll(exists, "hello", "absent") != absent {
		t.Errorf("the answers tell an existing provider from an absent one:\n%s\n%s", exists, absent)
	}
	// An archive URL handed to team-a is signed; team-a's token opens its
	// own archives, not another team's.
	var mv networkMirrorVersion
	r := p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/1.0.0.json", as(tokenA))
	json.Unmarshal(r.Body, &mv)
	u := resolve(t, r.URL, mv.Archives["linux_amd64"].URL)
	if got := p.get(t, u); got.Status != 200 {
		t.Fatalf("signed archive URL: %d %s", got.Status, got.Body)
	}
	var other networkMirrorVersion
	r = p.do(t, http.MethodGet, "/v1/mirror/example.com/team-b/hello/1.0.0.json", as(admin))
	json.Unmarshal(r.Body, &other)
	unsigned := strings.SplitN(resolve(t, r.URL, other.Archives["linux_amd64"].URL), "?", 2)[0]
	if code, body := status(unsigned, tokenA); code != 404 || !strings.Contains(body, "not within the scope") {
		t.Errorf("team-a's token on team-b's archive: %d %s", code, body)
	}
	if code, _ := status(unsigned, admin); code != 200 {
		t.Errorf("the operator's token on an archive: %d", code)
	}
	// An expired client's token is refused, saying so; an unknown one too.
	if code, body := status("/v1/mirror/example.com/team-b/hello/index.json", tokenB); code != 401 || !strings.Contains(body, "the tokens of client team-b expired at") {
		t.Errorf("expired client: %d %s", code, body)
	}
	if code, body := status("/v1/mirror/example.com/team-a/hello/index.json", "guess"); code != 401 || !strings.Contains(body, "not one this proxy accepts") {
		t.Errorf("unknown token: %d %s", code, body)
	}
	for _, secret := range []string{tokenA, tokenB, admin} {
		if strings.Contains(p.logs.String(), secret) {
			t.Errorf("a token in the log")
		}
	}
}

// A client past its request budget gets 429 with Retry-After, and only
// it: another client, and the operator, are served; the counts are by
// client name.
func TestClientBudgets(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	p := startProxy(t, Options{
		ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		Policy: mustPolicy(t, fmt.Sprintf(`
client "loop" {
  tokens    = [%q]
  providers = ["example.com/test/*"]
  rate      = 0.01
  burst     = 2
}
client "calm" {
  tokens    = [%q]
  providers = ["example.com/test/*"]
}
`, policy.TokenHash("loop-token"), policy.TokenHash("calm-token"))),
	})
	path := "/v1/mirror/example.com/test/hello/index.json"
	as := func(token string) response {
		return p.do(t, http.MethodGet, path, map[string]string{"Authorization": "Bearer " + token})
	}
	for i := range 2 {
		if r := as("loop-token"); r.Status != 200 {
			t.Fatalf("request %d within the burst: %d %s", i, r.Status, r.Body)
		}
	}
	r := as("loop-token")
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "100" || !strings.Contains(string(r.Body), "client loop is over its request budget") {
		t.Fatalf("over the budget: %d Retry-After %q %s", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	for range 5 {
		if r := as("calm-token"); r.Status != 200 {
			t.Fatalf("another client: %d", r.Status)
		}
	}
	metrics := string(p.get(t, "/metrics").Body)
	for _, want := range []string{`oci_tofu_client_requests_total{client="loop",outcome="accepted"} 2`, `oci_tofu_client_requests_total{client="loop",outcome="limited"} 1`,
		`oci_tofu_client_requests_total{client="calm",outcome="accepted"} 5`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// A client's archive requests spend from its budget as its documents
// do, with its token or without: the signed URLs its documents handed
// out carry a ticket naming the client (even without an audit trail),
// so sent without a token past the budget they get 429 too; a forged
// or stripped ticket is no way around it (403 while some client has a
// budget), nor is a registry user's ticket for the same name
// (TestTicketNamesAnIdentity).
func TestClientBudgetsBoundArchives(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	p := startProxy(t, Options{
		ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		Policy: mustPolicy(t, fmt.Sprintf(`
client "loop" {
  tokens    = [%q]
  providers = ["example.com/test/*"]
  rate      = 0.01
  burst     = 3
}
`, policy.TokenHash("loop-token"))),
	})
	as := map[string]string{"Authorization": "Bearer loop-token"}
	var mv networkMirrorVersion
	r := p.do(t, http.MethodGet, "/v1/mirror/example.com/test/hello/1.0.0.json", as)
	if r.Status != 200 || json.Unmarshal(r.Body, &mv) != nil {
		t.Fatalf("the version's document: %d %s", r.Status, r.Body)
	}
	signed := resolve(t, r.URL, mv.Archives["linux_amd64"].URL)
	unsigned, _, _ := strings.Cut(signed, "?")
	for i := range 2 {
		if r := p.do(t, http.MethodGet, unsigned, as); r.Status != 200 {
			t.Fatalf("archive %d within the burst: %d %s", i, r.Status, r.Body)
		}
	}
	r = p.do(t, http.MethodGet, unsigned, as)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "100" || !strings.Contains(string(r.Body), "client loop is over its request budget") {
		t.Errorf("an archive over the budget: %d Retry-After %q %s", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	if !strings.Contains(signed, "&by=loop.") {
		t.Fatalf("the signed URL handed to a client with a budget carries no ticket: %s", signed)
	}
	for range 3 {
		r := p.get(t, signed)
		if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "100" || !strings.Contains(string(r.Body), "client loop is over its request budget") {
			t.Errorf("the signed URL without a token, over the budget: %d Retry-After %q %s", r.Status, r.Header.Get("Retry-After"), r.Body)
		}
	}
	stripped, _, _ := strings.Cut(signed, "&by=")
	for _, u := range []string{strings.Replace(signed, "&by=loop.", "&by=loop.x", 1), stripped} {
		if r := p.get(t, u); r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), "no valid ticket") {
			t.Errorf("a signed URL with its ticket forged or left out: %d %s", r.Status, r.Body)
		}
	}
}

// /v1/whoami tells the caller who it is to the proxy, with the token the
// protocols take.
func TestWhoami(t *testing.T) {
	dir, _ := layoutStore(t)
	open := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})
	var w map[string]any
	open.getJSON(t, "/v1/whoami", 200, &w)
	if w["authentication"] != "off" {
		t.Errorf("without client authentication: %v", w)
	}
	p := startProxy(t, Options{
		ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		AuthTokens:       []string{"operator-token-0123"},
		Policy: mustPolicy(t, fmt.Sprintf(`
client "ci" {
  tokens    = [%q]
  providers = ["example.com/test/*"]
  expires   = "2099-01-01T00:00:00Z"
  rate      = 10
}`, policy.TokenHash("ci-token"))),
	})
	if r := p.get(t, "/v1/whoami"); r.Status != 401 || !strings.Contains(string(r.Body), fmt.Sprintf(`credentials \"%s\"`, strings.TrimPrefix(p.URL, "https://"))) {
		t.Errorf("no token: %d %s, want 401 naming the host and port a credentials block is for", r.Status, r.Body)
	}
	r := p.do(t, http.MethodGet, "/v1/whoami", map[string]string{"Authorization": "Bearer ci-token"})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"client":"ci"`) || !strings.Contains(string(r.Body), `"providers":["example.com/test/*"]`) ||
		!strings.Contains(string(r.Body), `"expires":"2099-01-01T00:00:00Z"`) || !strings.Contains(string(r.Body), `"requests_per_second":10,"burst":20`) {
		t.Errorf("client: %d %s", r.Status, r.Body)
	}
	r = p.do(t, http.MethodGet, "/v1/whoami", map[string]string{"Authorization": "Bearer operator-token-0123"})
	if r.Status != 200 || !strings.Contains(string(r.Body), `"authentication":"operator"`) {
		t.Errorf("operator: %d %s", r.Status, r.Body)
	}
}

// Clients are added and revoked by reloads while 30 clients ask: a valid
// client never fails, and a revoked token never succeeds once the reload
// that revoked it is in force.
func TestClientReloadsUnderLoad(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	file := func(extra ...string) *policy.Policy {
		src := fmt.Sprintf("client \"steady\" {\n  tokens = [%q]\n  providers = [\"example.com/test/*\"]\n}\n", policy.TokenHash("steady-token"))
		for _, name := range extra {
			src += fmt.Sprintf("client %q {\n  tokens = [%q]\n  providers = [\"example.com/test/*\"]\n}\n", name, policy.TokenHash(name+"-token"))
		}
		p, err := policy.Parse([]byte(src), "policy.hcl")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	live := policy.NewLive(file("churn"))
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: live})
	path := p.URL + "/v1/mirror/example.com/test/hello/index.json"
	ask := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := p.Client.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if code := ask("steady-token"); code != http.StatusOK {
					t.Errorf("a valid client got %d during reloads", code)
					return
				}
			}
		}()
	}
	for i := range 20 {
		if i%2 == 0 {
			live.Replace(file())
			if code := ask("churn-token"); code != http.StatusUnauthorized {
				t.Errorf("reload %d: a revoked token got %d", i, code)
			}
		} else {
			live.Replace(file("churn"))
			if code := ask("churn-token"); code != http.StatusOK {
				t.Errorf("reload %d: an added token got %d", i, code)
			}
		}
	}
	close(stop)
	wg.Wait()
}

// With client authentication the page says who the caller's token names,
// or how to ask; never what a token is.
func TestPageShowsTheCaller(t *testing.T) {
	dir, _ := layoutStore(t)
	p := startProxy(t, Options{
		ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		Policy:           mustPolicy(t, fmt.Sprintf("client \"ci\" {\n  tokens = [%q]\n  providers = [\"example.com/test/*\"]\n  rate = 10\n}\n", policy.TokenHash("ci-token"))),
	})
	anon := string(p.get(t, "/").Body)
	if !strings.Contains(anon, "/v1/whoami") || strings.Contains(anon, `id="caller"`) {
		t.Errorf("the page without a token:\n%s", anon)
	}
	page := string(p.do(t, http.MethodGet, "/", map[string]string{"Authorization": "Bearer ci-token"}).Body)
	if !strings.Contains(page, "Client ci: reads 1 provider pattern; named by 1 token; 10 requests per second, bursts of 20.") || strings.Contains(page, "ci-token") {
		t.Errorf("the page with ci's token:\n%s", page)
	}
}

// With client authentication, nothing on the page at / comes from what
// another caller read: a client reads and downloads its provider, and
// reads one whose registry content is wrong (a 502 naming its address); the page
// without a token, and the pages of both clients, name neither.
func TestPageShowsNoOtherCallersReads(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("hushhush", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	push(t, open("hushhush", "broken"), releaseArtifact(t, "1.0.0"), "1.0.0") // of type hello: 502
	p := startProxy(t, Options{
		ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		RegistryHostname: "example.com",
		Policy: mustPolicy(t, fmt.Sprintf("client \"team-a\" {\n  tokens = [%q]\n  providers = [\"example.com/hushhush/*\"]\n}\nclient \"team-b\" {\n  tokens = [%q]\n  providers = [\"example.com/team-b/*\"]\n}\n",
			policy.TokenHash("token-a"), policy.TokenHash("token-b"))),
	})
	as := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	for path, want := range map[string]int{
		"/v1/providers/hushhush/hello/versions":             200,
		"/v1/mirror/example.com/hushhush/hello/index.json":  200,
		"/v1/mirror/example.com/hushhush/hello/1.0.0.json":  200,
		"/v1/mirror/example.com/hushhush/broken/1.0.0.json": 502,
	} {
		if got := p.do(t, http.MethodGet, path, as("token-a")); got.Status != want {
			t.Fatalf("team-a reading %s: %d, want %d: %s", path, got.Status, want, got.Body)
		}
	}
	var doc struct {
		Archives map[string]struct{ URL string } `json:"archives"`
	}
	r := p.do(t, http.MethodGet, "/v1/mirror/example.com/hushhush/hello/1.0.0.json", as("token-a"))
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if got := p.get(t, resolve(t, r.URL, doc.Archives["linux_amd64"].URL)); got.Status != 200 {
		t.Fatalf("team-a's download: %d", got.Status)
	}
	for who, header := range map[string]map[string]string{"no token": nil, "team-b": as("token-b"), "team-a": as("token-a")} {
		page := p.do(t, http.MethodGet, "/", header)
		if page.Status != 200 {
			t.Fatalf("the page for %s: %d", who, page.Status)
		}
		if body := string(page.Body); strings.Contains(body, "hushhush") {
			t.Errorf("the page for %s names what team-a read:\n%s", who, grepLines(body, "hushhush"))
		}
	}
}

// A registry user named like a policy file client downloads by the
// signed URLs of their documents without spending the client's budget,
// and the client's own signed URLs spend it: the ticket names an
// identity, not a name.
func TestRegistryUserSpendsNoClientsBudget(t *testing.T) {
	reg := teamRegistry(t)
	pushTo(t, reg, "providers/team-a/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	p := registryDecidesProxy(t, reg, Options{
		Policy: mustPolicy(t, fmt.Sprintf(`
client "alice" {
  tokens    = [%q]
  providers = ["example.com/team-a/*"]
  rate      = 0.01
  burst     = 1
}
`, policy.TokenHash("alice-client-token"))),
	})
	signedURL := func(token string) string {
		var mv networkMirrorVersion
		r := p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/1.0.0.json", map[string]string{"Authorization": "Bearer " + token})
		if r.Status != 200 || json.Unmarshal(r.Body, &mv) != nil {
			t.Fatalf("the version's document for %s: %d %s", token, r.Status, r.Body)
		}
		return resolve(t, r.URL, mv.Archives["linux_amd64"].URL)
	}
	user := signedURL("alice:alice-Pa55")
	for i := range 3 {
		if r := p.get(t, user); r.Status != 200 {
			t.Fatalf("registry user alice's signed URL, download %d: %d %s", i, r.Status, r.Body)
		}
	}
	client := signedURL("alice-client-token") // spends the burst
	if r := p.get(t, client); r.Status != http.StatusTooManyRequests || !strings.Contains(string(r.Body), "client alice is over its request budget") {
		t.Errorf("client alice's signed URL past its budget: %d (%d bytes), want 429", r.Status, len(r.Body))
	}
	if user == client {
		t.Error("the registry user and the client were handed the same URL")
	}
}
