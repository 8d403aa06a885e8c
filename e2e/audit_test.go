package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
)

// auditEvents reads every event of an audit file.
func auditEvents(t *testing.T, path string) []audit.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []audit.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev audit.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: a line that is not an event: %q", path, sc.Text())
		}
		out = append(out, ev)
	}
	return out
}

// downloads are the artifacts delivered among evs.
func downloads(evs []audit.Event) []audit.Event {
	var out []audit.Event
	for _, ev := range evs {
		if ev.Delivered() {
			out = append(out, ev)
		}
	}
	return out
}

// stop sends SIGTERM and waits for a clean exit (the audit trail is
// flushed by then).
func (s *served) stop(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		t.Fatal("oci-tofu serve did not stop on SIGTERM")
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("oci-tofu serve exited with %d:\n%s", code, s.logs.String())
	}
}

// Real tofu (network mirror) and terraform (registry protocol), with a
// client's token, install a provider through serve --audit-log: the
// trail holds exactly one download each, naming the client, the
// address each used, the version, the platform, the package's digest
// (the lock file's zh:), the repository and the client's user agent;
// `oci-tofu usage` answers who uses the provider.
func TestAuditTrailOfRealInstalls(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/team-a/hello", "1.0.0")
	const token = "team-a-token-for-the-audit-test"
	port := testenv.FreePort(t)
	host := fmt.Sprintf("localhost:%d", port)
	pol := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(pol, []byte(fmt.Sprintf("client \"team-a\" {\n  tokens = [%q]\n  providers = [\"example.com/team-a/*\", \"localhost/team-a/*\"]\n}\n", policy.TokenHash(token))), 0o600); err != nil {
		t.Fatal(err)
	}
	trail := filepath.Join(t.TempDir(), "audit.log")
	s := startServeOn(t, port, nil, "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--policy", pol, "--audit-log", trail)
	platform := runtime.GOOS + "_" + runtime.GOARCH
	creds := fmt.Sprintf("credentials %q {\n  token = %q\n}\n", host, token)
	config := strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "test/hello", "team-a/hello", 1)

	tofu := testenv.Tofu(t, networkMirrorConfig(s)+creds)
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": config})
	tofu.Run(t, dir, "init", "-input=false", "-no-color")
	zh := lockEntry(t, dir, "example.com/team-a/hello", "1.0.0")
	terraform := testenv.Terraform(t, creds)
	tfDir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(config, "example.com/team-a/hello", host+"/team-a/hello", 1)})
	terraform.Run(t, tfDir, "init", "-input=false", "-no-color")
	s.stop(t)

	got := downloads(auditEvents(t, trail))
	if len(got) != 2 {
		t.Fatalf("%d downloads in the trail, want 2: %+v", len(got), got)
	}
	digest := "sha256:" + strings.TrimPrefix(zhOf(t, zh.Hashes), "zh:")
	for i, ev := range got {
		wantAddr, agent := "example.com/team-a/hello", "OpenTofu/"
		if i == 1 {
			wantAddr, agent = "localhost/team-a/hello", "Terraform/"
		}
		if ev.Client != "team-a" || ev.Identity != audit.IdentitySignedURL || ev.Kind != "provider" || ev.Address != wantAddr ||
			ev.Version != "1.0.0" || ev.Platform != platform || ev.Digest != digest || ev.Repository != reg.Host+"/providers/team-a/hello" ||
			ev.Source != audit.SourceHeld || !strings.HasPrefix(ev.UserAgent, agent) || ev.Remote != "127.0.0.1" || ev.Status != 200 {
			t.Errorf("download %d: %+v\nwant team-a, %s 1.0.0 %s %s from %s by %s…", i, ev, wantAddr, platform, digest, reg.Host, agent)
		}
	}

	var rep struct {
		Users []audit.Row `json:"users"`
	}
	out := mustRun(t, "usage", "--json", "--audit-log", trail, "example.com/team-a/hello@1.0.0")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Users) != 1 || rep.Users[0].Client != "team-a" || rep.Users[0].Count != 1 {
		t.Fatalf("usage example.com/team-a/hello@1.0.0: %v\n%s", err, out)
	}
	human := mustRun(t, "usage", "--audit-log", trail)
	if !strings.Contains(human, "example.com/team-a/hello") || !strings.Contains(human, "team-a") {
		t.Errorf("usage:\n%s", human)
	}
}

// zhOf is the zh: hash of a lock file entry.
func zhOf(t *testing.T, hashes []string) string {
	t.Helper()
	for _, h := range hashes {
		if strings.HasPrefix(h, "zh:") {
			return h
		}
	}
	t.Fatalf("no zh: hash in the lock file")
	return ""
}

// Thirty clients install at once, from replica a while it runs, and one
// is stopped gracefully (SIGTERM) in the middle of the load, the
// clients going on with replica b: every package a client
// received whole has exactly one download event, in the trail of the
// replica that served it — none lost at the shutdown, none for a
// download that was cut — and `oci-tofu usage` over both replicas'
// files counts them all.
func TestAuditTrailUnderLoadAndARestart(t *testing.T) {
	const clients, beforeStop, afterStop = 30, 200, 3
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
	pol := filepath.Join(t.TempDir(), "policy.hcl")
	var clientBlocks strings.Builder
	for i := range clients {
		fmt.Fprintf(&clientBlocks, "client \"c%02d\" {\n  tokens = [%q]\n  providers = [\"*/*/*\"]\n}\n", i, policy.TokenHash(fmt.Sprintf("token-%02d", i)))
	}
	if err := os.WriteFile(pol, []byte(clientBlocks.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	trails := t.TempDir()
	key := filepath.Join(t.TempDir(), "url-key")
	os.WriteFile(key, []byte("a key both replicas sign URLs with"), 0o600)
	replica := func(name string) *served {
		return startServeEnv(t, []string{"OCI_TOFU_SHUTDOWN_DELAY=1s"}, "--provider-template", reg.Host+"/providers/${namespace}/${type}",
			"--policy", pol, "--url-signing-key-file", key, "--audit-log", filepath.Join(trails, name+".log"), "--log-level", "warn")
	}
	a, b := replica("a"), replica("b")
	want := "sha256:" + fixtureZipSHA(t, "1.0.0", "linux_amd64")

	var received atomic.Int64
	perClient := make([]atomic.Int64, clients)
	var wg sync.WaitGroup
	stopA := make(chan struct{})
	var stopOnce sync.Once
	var aStopped atomic.Bool
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			token := fmt.Sprintf("token-%02d", i)
			for after := 0; after < afterStop; {
				if aStopped.Load() {
					after++
				}
				if received.Load() >= beforeStop {
					stopOnce.Do(func() { close(stopA) })
				}
				for _, s := range []*served{a, b} {
					if s == a && aStopped.Load() {
						continue
					}
					if ok, delivered := install(s, token, want); ok || delivered {
						if delivered {
							received.Add(1)
							perClient[i].Add(1)
						}
						break
					}
				}
			}
		}()
	}
	<-stopA
	a.stop(t) // drains: serves for a second, then stops; its trail is flushed
	aStopped.Store(true)
	wg.Wait()
	b.stop(t)

	evsA, evsB := downloads(auditEvents(t, filepath.Join(trails, "a.log"))), downloads(auditEvents(t, filepath.Join(trails, "b.log")))
	if len(evsA) == 0 || len(evsB) == 0 {
		t.Fatalf("replica a has %d downloads, b %d: the load did not reach both", len(evsA), len(evsB))
	}
	if n := int64(len(evsA) + len(evsB)); n != received.Load() {
		t.Fatalf("%d download events, %d packages received whole", n, received.Load())
	}
	byClient := map[string]int64{}
	for _, ev := range append(evsA, evsB...) {
		if ev.Digest != want {
			t.Fatalf("an event with digest %s, want %s", ev.Digest, want)
		}
		byClient[ev.Client]++
	}
	for i := range clients {
		if got, want := byClient[fmt.Sprintf("c%02d", i)], perClient[i].Load(); got != want {
			t.Errorf("client c%02d: %d events, %d packages received", i, got, want)
		}
	}
	var rep struct {
		Events  int64       `json:"events"`
		Clients []audit.Row `json:"clients"`
	}
	out := mustRun(t, "usage", "--json", "--top", "0", "--audit-log", trails)
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Clients) != clients {
		t.Fatalf("usage over both replicas: %v\n%s", err, out)
	}
	var total int64
	for _, c := range rep.Clients {
		total += c.Count
	}
	if total != received.Load() {
		t.Errorf("usage counts %d downloads, clients received %d", total, received.Load())
	}
}

// install does what tofu does through the network mirror: the version
// document with the client's token, then the package by the signed URL
// it names (no token). ok says the replica answered; delivered that the
// whole package arrived with the right digest.
func install(s *served, token, want string) (ok, delivered bool) {
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/v1/mirror/example.com/test/hello/1.0.0.json", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.client.Do(req)
	if err != nil {
		return false, false
	}
	var doc struct {
		Archives map[string]struct{ URL string } `json:"archives"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		return false, false
	}
	base, _ := url.Parse(s.URL + "/v1/mirror/example.com/test/hello/1.0.0.json")
	ref, err := base.Parse(doc.Archives["linux_amd64"].URL)
	if err != nil {
		return false, false
	}
	resp, err = s.client.Get(ref.String())
	if err != nil {
		return false, false
	}
	defer resp.Body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, resp.Body); err != nil || resp.StatusCode != 200 {
		return true, false
	}
	return true, "sha256:"+hex.EncodeToString(h.Sum(nil)) == want
}

// A fleet answers usage questions from the Redis it shares, without
// audit files: each replica adds the packages it delivered to counts
// there (flushed at the latest when it stops), and `oci-tofu usage
// --shared-cache` reads the fleet's totals.
func TestFleetUsageFromTheSharedCache(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
	redis := testenv.StartRedis(t)
	pol := filepath.Join(t.TempDir(), "policy.hcl")
	os.WriteFile(pol, []byte(fmt.Sprintf("client \"ci\" {\n  tokens = [%q]\n  providers = [\"*/*/*\"]\n}\nclient \"dev\" {\n  tokens = [%q]\n  providers = [\"*/*/*\"]\n}\n",
		policy.TokenHash("ci-token"), policy.TokenHash("dev-token"))), 0o600)
	replica := func() *served {
		return startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--policy", pol, "--shared-cache", redis.URL(), "--shared-cache-timeout", "2s")
	}
	a, b := replica(), replica()
	want := "sha256:" + fixtureZipSHA(t, "1.0.0", "linux_amd64")
	for s, installs := range map[*served]map[string]int{a: {"ci-token": 3, "dev-token": 1}, b: {"ci-token": 2}} {
		for token, n := range installs {
			for range n {
				if _, delivered := install(s, token, want); !delivered {
					t.Fatalf("install with %s failed", token)
				}
			}
		}
	}
	a.stop(t)
	b.stop(t)
	var rep struct {
		Clients []audit.Row `json:"clients"`
		Users   []audit.Row `json:"users"`
	}
	out := mustRun(t, "usage", "--json", "--shared-cache", redis.URL())
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Clients) != 2 ||
		rep.Clients[0].Client != "ci" || rep.Clients[0].Count != 5 || rep.Clients[1].Client != "dev" || rep.Clients[1].Count != 1 {
		t.Fatalf("usage --shared-cache: %v\n%s", err, out)
	}
	out = mustRun(t, "usage", "--json", "--shared-cache", redis.URL(), "example.com/test/hello@1.0.0")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Users) != 2 || time.Since(rep.Users[0].Last) > time.Minute {
		t.Fatalf("usage --shared-cache example.com/test/hello@1.0.0: %v\n%s", err, out)
	}
}

// `serve --audit-log -` with its standard output a pipe nobody reads
// (`| sleep 3600`): a thousand and more audited refusals, then an
// install's document and package, each answered within 30 s, and the
// events past the 8 MiB the trail holds counted lost. When the pipe is
// read again, serve stops cleanly.
func TestAuditToAPipeNobodyReads(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
	pol := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(pol, []byte(fmt.Sprintf("client \"ci\" {\n  tokens = [%q]\n  providers = [\"*/*/*\"]\n}\n", policy.TokenHash("ci-token"))), 0o600); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	port := testenv.FreePort(t)
	ca := testenv.NewCA(t)
	cmd := exec.Command(ociTofu, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--tls-cert", ca.ServerCertFile, "--tls-key", ca.ServerKeyFile,
		"--shutdown-timeout", "10s", "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--policy", pol, "--audit-log", "-", "--log-level", "warn")
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+ca.CertFile, "DOCKER_CONFIG="+t.TempDir())
	cmd.Stdout = w
	s := launchServe(t, cmd, port)
	w.Close()                                       // serve holds its own copy
	t.Cleanup(func() { go io.Copy(io.Discard, r) }) // before serve's stop: its last flush gets through

	within := func(what string, do func() (int, error)) int {
		t.Helper()
		type answer struct {
			status int
			err    error
		}
		got := make(chan answer, 1)
		go func() { status, err := do(); got <- answer{status, err} }()
		select {
		case a := <-got:
			if a.err != nil {
				t.Fatalf("%s: %v", what, a.err)
			}
			return a.status
		case <-time.After(30 * time.Second):
			t.Fatalf("%s not answered within 30s: the audit pipe nobody reads holds it", what)
			return 0
		}
	}
	get := func(url, token string) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("User-Agent", strings.Repeat("u", 512))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := s.client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	const refusals = 10000 // about 1 KiB each: past the 8 MiB the trail holds
	for i := range refusals {
		if status := within(fmt.Sprintf("refusal %d", i), func() (int, error) { return get(s.URL+"/v1/mirror/example.com/test/hello/index.json", "") }); status != http.StatusUnauthorized {
			t.Fatalf("refusal %d: %d, want 401", i, status)
		}
	}
	want := "sha256:" + fixtureZipSHA(t, "1.0.0", "linux_amd64")
	if status := within("an install after the refusals", func() (int, error) {
		if ok, delivered := install(s, "ci-token", want); !ok || !delivered {
			return 0, fmt.Errorf("answered %v, delivered %v", ok, delivered)
		}
		return 200, nil
	}); status != 200 {
		t.Fatalf("an install after the refusals: %d", status)
	}
	if lost := metric(t, s, "oci_tofu_audit_events_lost_total"); lost == "0" || lost == "" {
		t.Errorf("oci_tofu_audit_events_lost_total = %q, want the events past the bound", lost)
	}
	if n := strings.Count(s.logs.String(), "audit events lost"); n != 1 {
		t.Errorf("the loss logged %d times, want once:\n%s", n, s.logs.String())
	}
}
