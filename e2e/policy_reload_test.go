package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

const (
	reloadAllow  = "provider \"example.com/test/*\" {\n  name = \"hello-all\"\n}\n"
	reloadDeny   = "provider \"example.com/test/*\" {\n  name = \"no-1.1.0\"\n  deny = [\"1.1.0\"]\n}\n"
	reloadBroken = "provider \"example.com/test/*\" {\n  name = \"broken\"\n  deny = [\"1.1.0\"\n}\n"
	reloadFixed  = "provider \"example.com/test/*\" {\n  name = \"hello-fixed\"\n}\n"
)

// The policy reloads under load: 32 clients send at least 20,000
// requests while the policy file is rewritten — allow, then deny 1.1.0,
// then a broken file, then a fixed one — and every answer is the old or
// the new decision, never an error. Each new decision is in effect once
// the reload happened, without a restart; the broken file leaves the
// previous policy in force, with its error (file:line:column) in the log,
// the metrics and the page; SIGHUP reloads too. Real tofu, initialising
// through the network mirror under that load, installs what the policy
// in force allows. The decision metrics'
// rule labels are the file's rule names or "default".
func TestPolicyReloadUnderLoad(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "1.1.0")
	dir := t.TempDir()
	file := dir + "/policy.hcl"
	renameWrite(t, file, reloadAllow)
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--policy", file)

	stop := make(chan struct{})
	load := startPolicyLoad(t, s, stop)

	waitForLoad(load, 2000)
	renameWrite(t, file, reloadDeny)
	pollUntil(t, "1.1.0 denied after the reload", func() bool { return mirrorDoc(t, s, "1.1.0.json") == 404 })
	if _, body := s.get(t, "/v1/mirror/example.com/test/hello/index.json"); strings.Contains(string(body), "1.1.0") {
		t.Errorf("index.json still lists 1.1.0 after the reload: %s", body)
	}
	tofuInstalls(t, s, "1.0.0") // the real client sees the new decision, under load

	waitForLoad(load, 6000)
	renameWrite(t, file, reloadBroken)
	pollUntil(t, "the broken file's reload error in the metrics", func() bool { return metric(t, s, "oci_tofu_policy_reload_errors_total") == "1" })
	if code := mirrorDoc(t, s, "1.1.0.json"); code != 404 {
		t.Errorf("with the broken file, 1.1.0.json: %d, want the previous policy's 404", code)
	}
	if got := metric(t, s, "oci_tofu_policy_file_current"); got != "0" {
		t.Errorf("oci_tofu_policy_file_current = %s with the broken file", got)
	}
	// The last good policy is in force: the replica stays in service (a
	// broken ConfigMap reaches every replica; docs/proxy.md, "Probes").
	if code, body := s.get(t, "/readyz"); code != 200 {
		t.Errorf("/readyz with the broken file: %d %s, want 200", code, body)
	}
	brokenAt := file + ":4:1:"
	if !strings.Contains(s.logs.String(), brokenAt) {
		t.Errorf("the log does not name the broken file's line and column %q", brokenAt)
	}
	if _, page := s.get(t, "/"); !strings.Contains(string(page), brokenAt) || !strings.Contains(string(page), "stays in force") {
		t.Errorf("the page does not show the reload error:\n%s", page)
	}

	// SIGHUP reads the file again: still broken, one more error.
	s.cmd.Process.Signal(syscall.SIGHUP)
	pollUntil(t, "the SIGHUP reload's error", func() bool { return metric(t, s, "oci_tofu_policy_reload_errors_total") == "2" })
	// The log reaches the test through serve's stderr pipe, after the
	// metric may already read 2: wait for the line.
	sighupLine := regexp.MustCompile(`why=SIGHUP error="` + regexp.QuoteMeta(brokenAt))
	pollUntil(t, "the SIGHUP reload in the log", func() bool { return sighupLine.MatchString(s.logs.String()) })

	waitForLoad(load, 10000)
	renameWrite(t, file, reloadFixed)
	pollUntil(t, "1.1.0 served again after the fixed file", func() bool { return mirrorDoc(t, s, "1.1.0.json") == 200 })
	tofuInstalls(t, s, "1.1.0")
	if metric(t, s, "oci_tofu_policy_file_current") != "1" || metric(t, s, "oci_tofu_policy_reloads_total") != "2" {
		t.Errorf("after the fix: current %s, reloads %s", metric(t, s, "oci_tofu_policy_file_current"), metric(t, s, "oci_tofu_policy_reloads_total"))
	}
	// SIGHUP on an unchanged file: read, nothing changes, serve goes on.
	s.cmd.Process.Signal(syscall.SIGHUP)
	pollUntil(t, "the SIGHUP read of the unchanged file", func() bool {
		return strings.Contains(s.logs.String(), `msg="policy file read: unchanged"`) && strings.Contains(s.logs.String(), "why=SIGHUP rules=1")
	})

	waitForLoad(load, 20000)
	close(stop)
	load.wg.Wait()
	if n := load.failed.Load(); n > 0 {
		t.Fatalf("%d of %d answers were neither the old nor the new decision; first: %s", n, load.done.Load(), load.firstErr())
	}
	t.Logf("%d requests, %d answered 404 by the policy", load.done.Load(), load.denied.Load())
	if load.denied.Load() == 0 {
		t.Error("no request saw the deny policy")
	}
	checkDecisionLabels(t, s, "hello-fixed", "no-1.1.0", "hello-all", "default")
}

// tofuInstalls checks that tofu init through the network mirror, asked
// for ">= 1.0", installs version.
func tofuInstalls(t *testing.T, s *served, version string) {
	t.Helper()
	cli := testenv.Tofu(t, networkMirrorConfig(s))
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, ">= 1.0")})
	if out := cli.Run(t, dir, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed example.com/test/hello v"+version) {
		t.Errorf("tofu init did not install %s:\n%s", version, out)
	}
}

// renameWrite replaces file as editors do: a new file renamed over it.
func renameWrite(t *testing.T, file, content string) {
	t.Helper()
	if err := os.WriteFile(file+".new", []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		t.Fatal(err)
	}
}

// pollUntil polls cond until it holds; the bound only ends a test that
// would otherwise hang.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
	}
}

func mirrorDoc(t *testing.T, s *served, doc string) int {
	code, _ := s.get(t, "/v1/mirror/example.com/test/hello/"+doc)
	return code
}

// metric is the value of an unlabelled metric of the proxy ("" when absent).
func metric(t *testing.T, s *served, name string) string {
	_, body := s.get(t, "/metrics")
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// checkDecisionLabels checks that every oci_tofu_policy_decisions_total
// series has a closed kind and decision and one of rules.
func checkDecisionLabels(t *testing.T, s *served, rules ...string) {
	t.Helper()
	_, body := s.get(t, "/metrics")
	label := regexp.MustCompile(`(\w+)="([^"]*)"`)
	closed := map[string][]string{"kind": {"provider", "module", "tofu"}, "decision": {"allow", "deny"}, "rule": rules}
	series := 0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "oci_tofu_policy_decisions_total{") {
			continue
		}
		series++
		for _, m := range label.FindAllStringSubmatch(line, -1) {
			if !slices.Contains(closed[m[1]], m[2]) {
				t.Errorf("label %s=%q is not from its closed set: %s", m[1], m[2], line)
			}
		}
	}
	if series == 0 {
		t.Error("no oci_tofu_policy_decisions_total series")
	}
}

// policyLoad is clients asking for hello's documents until stopped.
type policyLoad struct {
	wg                   sync.WaitGroup
	done, failed, denied atomic.Int64
	mu                   sync.Mutex
	first                string
}

func (l *policyLoad) fail(format string, args ...any) {
	if l.failed.Add(1) == 1 {
		l.mu.Lock()
		l.first = fmt.Sprintf(format, args...)
		l.mu.Unlock()
	}
}

func (l *policyLoad) firstErr() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}

func waitForLoad(l *policyLoad, n int64) {
	for l.done.Load() < n {
		time.Sleep(20 * time.Millisecond)
	}
}

// startPolicyLoad starts 32 clients; each answer must be one that either
// policy gives: 1.1.0 served, or 404 naming the rule that denies it.
func startPolicyLoad(t *testing.T, s *served, stop chan struct{}) *policyLoad {
	l := &policyLoad{}
	paths := []string{
		"/v1/mirror/example.com/test/hello/index.json",
		"/v1/mirror/example.com/test/hello/1.1.0.json",
		"/v1/mirror/example.com/test/hello/1.0.0.json",
		"/v1/providers/test/hello/versions",
		"/v1/providers/test/hello/1.1.0/download/linux/amd64",
		"/healthz",
	}
	for c := 0; c < 32; c++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := c; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				path := paths[i%len(paths)]
				resp, err := s.client.Get(s.URL + path)
				if err != nil {
					l.fail("%s: %v", path, err)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				l.done.Add(1)
				if err != nil {
					l.fail("%s: %v", path, err)
					continue
				}
				l.check(path, resp.StatusCode, body)
			}
		}()
	}
	return l
}

func (l *policyLoad) check(path string, code int, body []byte) {
	if code == 404 && strings.Contains(path, "1.1.0") {
		var e struct{ Errors []string }
		if json.Unmarshal(body, &e) == nil && len(e.Errors) == 1 && strings.Contains(e.Errors[0], `1.1.0 is denied by the policy's rule "no-1.1.0"`) {
			l.denied.Add(1)
			return
		}
	}
	if code != 200 {
		l.fail("%s: %d %s", path, code, body)
		return
	}
	if strings.HasSuffix(path, "index.json") || strings.HasSuffix(path, "versions") {
		if !strings.Contains(string(body), `"1.0.0"`) {
			l.fail("%s: 1.0.0 not listed: %s", path, body)
		}
	}
}
