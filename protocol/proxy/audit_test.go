package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
)

// readAudit flushes trail and reads back every event of path.
func readAudit(t testing.TB, trail *audit.Log, path string) []audit.Event {
	t.Helper()
	trail.Flush()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev audit.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		out = append(out, ev)
	}
	return out
}

func openTrail(t testing.TB) (*audit.Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	trail, err := audit.Open(audit.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trail.Close() })
	return trail, path
}

// The audit trail names who downloaded what — through signed URLs too,
// by the ticket the client's document carried — and every refusal:
// out of scope, no token, the policy's denial; a forged ticket names no
// one, and what a client sends cannot forge a line.
func TestAuditTrailNamesWhoGotWhat(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("team-a", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	push(t, open("team-a", "hello"), releaseArtifact(t, "1.1.0"), "1.1.0")
	push(t, open("team-b", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	const tokenA, tokenB, admin = "token-of-team-a", "token-of-team-b", "operator-token"
	trail, path := openTrail(t)
	p := startProxy(t, Options{
		ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		RegistryHostname: "example.com",
		AuthTokens:       []string{admin},
		Audit:            trail,
		Policy: mustPolicy(t, fmt.Sprintf(`
client "team-a" {
  tokens    = [%q]
  providers = ["example.com/team-a/*"]
}
client "team-b" {
  tokens    = [%q]
  providers = ["example.com/team-b/*"]
}
provider "example.com/team-a/hello" {
  name = "no-1.1"
  deny = ["1.1.0"]
}
`, policy.TokenHash(tokenA), policy.TokenHash(tokenB))),
	})
	as := func(token string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + token, "User-Agent": forgingAgent}
	}
	zip := fixtureZip(t, "1.0.0", "linux_amd64")

	// team-a: its document, then the archive by the signed URL, without a token.
	var doc struct {
		Archives map[string]struct{ URL string } `json:"archives"`
	}
	docResp := p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/1.0.0.json", as(tokenA))
	if err := json.Unmarshal(docResp.Body, &doc); err != nil || docResp.Status != 200 {
		t.Fatalf("document: %d %s", docResp.Status, docResp.Body)
	}
	archive := resolve(t, docResp.URL, doc.Archives["linux_amd64"].URL)
	if !strings.Contains(archive, "&by=team-a.") {
		t.Fatalf("the signed URL handed to team-a carries no ticket: %s", archive)
	}
	if got := p.do(t, http.MethodGet, archive, nil); got.Status != 200 || string(got.Body) != string(zip) {
		t.Fatalf("archive: %d", got.Status)
	}
	// The same URL with team-b's name and team-a's MAC names no one.
	u, _ := url.Parse(archive)
	q := u.Query()
	q.Set("by", "team-b."+strings.SplitN(q.Get("by"), ".", 2)[1])
	u.RawQuery = q.Encode()
	if got := p.do(t, http.MethodGet, u.String(), nil); got.Status != 200 {
		t.Fatalf("forged ticket: %d", got.Status)
	}
	// The operator downloads with its token; team-a asks for team-b's
	// provider and for a denied version; someone sends no token.
	if got := p.do(t, http.MethodGet, archive, as(admin)); got.Status != 200 {
		t.Fatalf("operator: %d", got.Status)
	}
	p.do(t, http.MethodGet, "/v1/mirror/example.com/team-b/hello/1.0.0.json", as(tokenA))
	p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/1.1.0.json", as(tokenA))
	p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/index.json", nil)

	evs := readAudit(t, trail, path)
	want := []struct{ outcome, client, identity, address, version string }{
		{audit.OutcomeDelivered, "team-a", audit.IdentitySignedURL, "example.com/team-a/hello", "1.0.0"},
		{audit.OutcomeDelivered, "unknown", audit.IdentitySignedURL, "example.com/team-a/hello", "1.0.0"},
		{audit.OutcomeDelivered, "operator", audit.IdentityOperator, "example.com/team-a/hello", "1.0.0"},
		{audit.OutcomeRefused, "team-a", audit.IdentityClient, "example.com/team-b/hello", ""},
		{audit.OutcomeDenied, "team-a", audit.IdentityClient, "example.com/team-a/hello", ""},
		{audit.OutcomeNoAuth, "anonymous", audit.IdentityNone, "", ""},
	}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, w := range want {
		ev := evs[i]
		if ev.V != audit.SchemaVersion || ev.Outcome != w.outcome || ev.Client != w.client || ev.Identity != w.identity || ev.Address != w.address || ev.Version != w.version {
			t.Errorf("event %d: %+v\nwant %+v", i, ev, w)
		}
	}
	dl := evs[0]
	if dl.Event != audit.EventDownload || dl.Platform != "linux_amd64" || dl.Digest != "sha256:"+sha256Hex(zip) || dl.Source != audit.SourceHeld ||
		!strings.HasSuffix(dl.Repository, "team-a/hello") || dl.Bytes != int64(len(zip)) || dl.Status != 200 || dl.Remote != "127.0.0.1" {
		t.Errorf("download event: %+v", dl)
	}
	if op := evs[2]; !strings.HasPrefix(op.Token, "sha256:") || len(op.Token) != len("sha256:")+12 || strings.Contains(op.Token, admin) {
		t.Errorf("operator token fingerprint: %q", op.Token)
	}
	if evs[4].Rule != "no-1.1" || evs[4].Kind != string(names.KindProvider) {
		t.Errorf("denial: %+v", evs[4])
	}
	if evs[3].UserAgent != forgingAgent {
		t.Errorf("user agent: %q", evs[3].UserAgent)
	}
	if evs[5].Path != "/v1/mirror/example.com/team-a/hello/index.json" {
		t.Errorf("unauthenticated: %+v", evs[5])
	}
}

// forgingAgent is a User-Agent that would end an event's line and start
// another if it were written as it came (net/http sends no newline in a
// header: the audit package's own test writes those).
const forgingAgent = `OpenTofu/1.10.6 "},{"v":1,"client":"forged","x":"\\`

// An audit file that cannot be written (a full disk) costs no client
// anything: downloads are served, the events lost are counted in
// oci_tofu_audit_events_lost_total and the failure is logged once.
func TestAuditFileFullKeepsServing(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	trail, err := audit.Open(audit.Options{Path: "/dev/full"})
	if err != nil {
		t.Fatal(err)
	}
	defer trail.Close()
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Audit: trail})
	var doc struct {
		Archives map[string]struct{ URL string } `json:"archives"`
	}
	r := p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &doc)
	for range 3 {
		if got := p.get(t, resolve(t, r.URL, doc.Archives["linux_amd64"].URL)); got.Status != 200 {
			t.Fatalf("download with a full audit disk: %d", got.Status)
		}
	}
	trail.Flush()
	metrics := string(p.get(t, "/metrics").Body)
	if !strings.Contains(metrics, "oci_tofu_audit_events_lost_total 3") {
		t.Errorf("metrics do not count 3 lost events:\n%s", grepLines(metrics, "oci_tofu_audit"))
	}
}

// A module's package is a download too, named for the client by the
// ticket of the X-Terraform-Get URL it was handed; with AuditDocuments,
// every document is an event, naming the address it asked about.
func TestAuditTrailOfModulesAndDocuments(t *testing.T) {
	mdir, mopen := moduleStore(t)
	zip := moduleZip(t, "1.0.0")
	push(t, mopen("team-a", "net", "aws"), moduleArtifact(t, zip), names.TagForVersion(mustVersion(t, "1.0.0")))
	const token = "token-of-team-a"
	trail, path := openTrail(t)
	p := startProxy(t, Options{
		ModuleMappings:   []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")},
		RegistryHostname: "example.com",
		Audit:            trail,
		AuditDocuments:   true,
		Policy:           mustPolicy(t, fmt.Sprintf("client \"team-a\" {\n  tokens = [%q]\n  modules = [\"*/team-a/*/*\"]\n}\n", policy.TokenHash(token))),
	})
	as := map[string]string{"Authorization": "Bearer " + token, "User-Agent": "Terraform/1.11.4"}
	p.do(t, http.MethodGet, "/v1/modules/team-a/net/aws/versions", as)
	archive := p.moduleDownload(t, "/v1/modules/team-a/net/aws/1.0.0/download", as)
	if got := p.get(t, archive); got.Status != 200 || !bytes.Equal(got.Body, zip) {
		t.Fatalf("module archive: %d", got.Status)
	}
	evs := readAudit(t, trail, path)
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3 (two documents, one download): %+v", len(evs), evs)
	}
	for i, want := range []string{audit.EventDocument, audit.EventDocument, audit.EventDownload} {
		ev := evs[i]
		if ev.Event != want || ev.Client != "team-a" || ev.Kind != string(names.KindModule) || ev.Address != "example.com/team-a/net/aws" || ev.Outcome != audit.OutcomeDelivered {
			t.Errorf("event %d: %+v", i, ev)
		}
	}
	if dl := evs[2]; dl.Version != "1.0.0" || dl.Identity != audit.IdentitySignedURL || dl.Digest != "sha256:"+sha256Hex(zip) || dl.Source != audit.SourceHeld {
		t.Errorf("module download: %+v", dl)
	}
}

// An audit sink nobody reads (`serve --audit-log - | sleep 3600`) costs
// no client anything: a thousand and more audited refusals (past the
// 256 KiB the trail writes at once), then a download, each answered
// without waiting on the sink.
func TestAuditSinkStalledKeepsServing(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	trail, err := audit.Open(audit.Options{Path: "-", Stdout: w})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { go io.Copy(io.Discard, r); trail.Close() }()
	const token = "token-of-ci"
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Audit: trail,
		Policy: mustPolicy(t, fmt.Sprintf("client \"ci\" {\n  tokens = [%q]\n  providers = [\"*/*/*\"]\n}\n", policy.TokenHash(token)))})
	const refusals = 1500 // about 1 KiB each, with the user agent
	refuse := func() int {
		req, _ := http.NewRequest(http.MethodGet, p.URL+"/v1/mirror/example.com/test/hello/index.json", nil)
		req.Header.Set("User-Agent", strings.Repeat("u", 512))
		resp, err := p.Client.Do(req)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for n := range refusals {
		if status := answeredWithin(t, 30*time.Second, refuse); status != http.StatusUnauthorized {
			t.Fatalf("refusal %d: %d, want 401", n, status)
		}
	}
	download := func() int {
		var doc struct {
			Archives map[string]struct{ URL string } `json:"archives"`
		}
		res := p.do(t, http.MethodGet, "/v1/mirror/example.com/test/hello/1.0.0.json", map[string]string{"Authorization": "Bearer " + token})
		if json.Unmarshal(res.Body, &doc) != nil || res.Status != 200 {
			return res.Status
		}
		return p.get(t, resolve(t, res.URL, doc.Archives["linux_amd64"].URL)).Status
	}
	if status := answeredWithin(t, 30*time.Second, download); status != 200 {
		t.Fatalf("download: %d", status)
	}
}

// answeredWithin is do's result, or a failure of the test when do takes
// longer than limit (left running: what holds it may never let go).
func answeredWithin(t *testing.T, limit time.Duration, do func() int) int {
	t.Helper()
	got := make(chan int, 1)
	go func() { got <- do() }()
	select {
	case status := <-got:
		return status
	case <-time.After(limit):
		t.Fatalf("not answered within %s: the audit sink nobody reads holds the request", limit)
		return 0
	}
}
