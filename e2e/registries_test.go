package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// The registries as they are: every kind of registry, and real registries'
// manners put before one by a front (redirected blobs, paged tag lists,
// GHCR-style denials, distance and throttling). For each, the fixture is
// pushed with oci-tofu, installed by real tofu straight from the registry
// (oci_mirror), then by tofu and terraform through oci-tofu serve's network
// mirror and registry protocol; each case adds the checks its manners call
// for.
func TestRegistries(t *testing.T) {
	for _, c := range append(directCases(), frontCases...) {
		t.Run(c.name, func(t *testing.T) {
			tg := c.start(t)
			runCompat(t, tg)
		})
	}
}

// compatVersions are the fixture versions each case pushes; clients ask
// for "~> 1.0" and must get the newest.
var compatVersions = []string{"1.0.0", "1.1.0"}

// compatCase names a registry set-up of the compatibility suite.
type compatCase struct {
	name  string
	start func(t *testing.T) *compatTarget
}

// compatTarget is a running registry as the suite's clients reach it, with
// the hooks its case needs.
type compatTarget struct {
	reg   *testenv.Registry // the registry itself
	front *testenv.Front    // the front clients talk to, nil when none
	host  string            // what clients name: the front's or the registry's Host
	user  string            // credentials for host, "" when anonymous
	pass  string
	// serveArgs are extra oci-tofu serve flags.
	serveArgs []string
	// afterPush runs once the fixture is in the registry (e.g. more tags).
	afterPush func(t *testing.T, tg *compatTarget)
	// beforeDirect and beforeProxy run before tofu installs straight from
	// the registry and before the proxy starts.
	beforeDirect, beforeProxy func()
	// checkProxy adds the case's checks while the proxy runs.
	checkProxy func(t *testing.T, tg *compatTarget, s *served)
	// checkEnd adds the case's checks once every client has run.
	checkEnd func(t *testing.T, tg *compatTarget)
}

// directCases are the registries of every kind, reached as they are.
func directCases() []compatCase {
	var out []compatCase
	for _, k := range testenv.AllRegistries() {
		out = append(out, compatCase{k.Kind, func(t *testing.T) *compatTarget { return direct(k.Start(t)) }})
	}
	return out
}

// frontCases are registries behind fronts with the manners of registries
// out there.
var frontCases = []compatCase{
	{"redirect-other-port", func(t *testing.T) *compatTarget {
		return redirecting(t, testenv.StartRegistryWithAuth(t, "ci-bot", "s3cret-Pa55word"), testenv.RedirectOtherPort)
	}},
	{"redirect-plain-http", func(t *testing.T) *compatTarget {
		return redirecting(t, testenv.StartTokenRegistry(t, "robot", "t0ken-Pa55"), testenv.RedirectPlainHTTP)
	}},
	{"redirect-other-host", func(t *testing.T) *compatTarget {
		return redirecting(t, testenv.StartRegistryWithAuth(t, "ci-bot", "s3cret-Pa55word"), testenv.RedirectOtherHost)
	}},
	{"paging-100", paging},
	{"deny-missing", denyMissing},
	{"latency-429", latencyAnd429},
}

// direct is a registry that clients reach as it is.
func direct(reg *testenv.Registry) *compatTarget {
	return &compatTarget{reg: reg, host: reg.Host, user: reg.Username, pass: reg.Password}
}

// fronted is a registry that clients reach through front, with the
// registry's credentials.
func fronted(reg *testenv.Registry, front *testenv.Front) *compatTarget {
	return &compatTarget{reg: reg, front: front, host: front.Host, user: reg.Username, pass: reg.Password}
}

// redirecting sends blob downloads to another origin; credentials must
// only go to the origin that asked for them (scheme, host and port), so
// the redirect target never sees an Authorization header. Like presigned
// storage it refuses requests that carry one.
func redirecting(t *testing.T, reg *testenv.Registry, mode testenv.RedirectMode) *compatTarget {
	tg := fronted(reg, testenv.StartFrontFor(t, reg, testenv.FrontOptions{Redirect: mode}))
	tg.checkEnd = func(t *testing.T, tg *compatTarget) {
		t.Run("credentials-stay-at-origin", func(t *testing.T) {
			rt := tg.front.Redirects
			if len(rt.Requests()) == 0 {
				t.Fatalf("no download went to the redirect target %s", rt.URL)
			}
			for _, r := range rt.WithAuthorization() {
				scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
				t.Errorf("%s credentials leaked to %s: %s %s from %q", scheme, rt.URL, r.Method, r.Path, r.Header.Get("User-Agent"))
			}
		})
	}
	return tg
}

// pagingTags is how many tags beyond the fixture versions the paging case
// adds: more than one page of 100.
const pagingTags = 101

// paging serves tag lists in pages of 100 with opaque cursors, as ECR does,
// to a repository with more than 100 tags.
func paging(t *testing.T) *compatTarget {
	reg := testenv.StartRegistry(t)
	tg := fronted(reg, testenv.StartFrontFor(t, reg, testenv.FrontOptions{TagPageSize: 100}))
	tg.afterPush = func(t *testing.T, tg *compatTarget) { addVersionTags(t, tg.reg, pagingTags) }
	tg.checkProxy = func(t *testing.T, tg *compatTarget, s *served) {
		t.Run("lists-all-versions", func(t *testing.T) {
			want := len(compatVersions) + pagingTags
			var mirror struct {
				Versions map[string]any `json:"versions"`
			}
			getJSON(t, s, "/v1/mirror/example.com/test/hello/index.json", &mirror)
			if len(mirror.Versions) != want {
				t.Errorf("the network mirror lists %d versions, want %d", len(mirror.Versions), want)
			}
			var registry struct {
				Versions []struct {
					Version string `json:"version"`
				} `json:"versions"`
				Warnings []string `json:"warnings"`
			}
			getJSON(t, s, "/v1/providers/test/hello/versions", &registry)
			if n := len(registry.Versions) + len(registry.Warnings); n != want {
				t.Errorf("the registry protocol accounts for %d versions (%d listed, %d explained), want %d",
					n, len(registry.Versions), len(registry.Warnings), want)
			}
			if paged := tg.front.Count(func(e testenv.AccessEntry) bool { return e.Action == "paged" && e.Query != "" }); paged == 0 {
				t.Errorf("no client asked for a second page")
			}
		})
	}
	return tg
}

// addVersionTags tags the fixture's 1.0.0 index as 0.N.0 for N in 1..n,
// straight in the registry (set-up, not under test).
func addVersionTags(t *testing.T, reg *testenv.Registry, n int) {
	t.Helper()
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("0.%d.0", i+1)
	}
	tagRepo(t, reg, "providers/test/hello", "1.0.0", tags...)
}

// denyMissing answers 403 DENIED for repositories that do not exist, as
// GHCR does, in front of a token-auth registry. With --denied-as-missing
// for that host, the proxy answers 404 for a provider it cannot see (so
// tofu and terraform fall through to their next installation method),
// while a wrong credential for an existing repository is still a 5xx.
func denyMissing(t *testing.T) *compatTarget {
	reg := testenv.StartTokenRegistry(t, "robot", "t0ken-Pa55")
	tg := fronted(reg, testenv.StartFrontFor(t, reg, testenv.FrontOptions{DenyMissing: http.StatusForbidden}))
	tg.serveArgs = []string{"--denied-as-missing", tg.host}
	tg.checkProxy = func(t *testing.T, tg *compatTarget, s *served) {
		t.Run("unknown-provider-404", func(t *testing.T) {
			for _, path := range []string{"/v1/mirror/example.com/test/nothere/index.json", "/v1/providers/test/nothere/versions"} {
				assertJSONError(t, s, path, http.StatusNotFound, http.StatusNotFound)
			}
			if n := tg.front.Count(func(e testenv.AccessEntry) bool { return e.Action == "denied" }); n == 0 {
				t.Errorf("the front denied nothing: the proxy never asked for the missing repository")
			}
		})
		t.Run("wrong-credential-5xx", func(t *testing.T) {
			wrong := startServeEnv(t, credentialEnv(t, testenv.Credential{Host: tg.host, Username: tg.user, Password: "wrong"}),
				append([]string{"--provider-template", tg.host + "/providers/${namespace}/${type}"}, tg.serveArgs...)...)
			for _, path := range []string{"/v1/mirror/example.com/test/hello/index.json", "/v1/providers/test/hello/versions"} {
				assertJSONError(t, wrong, path, 500, 504)
			}
		})
		for _, c := range clis {
			t.Run("fall-through/"+c.name, func(t *testing.T) {
				assertFallsThrough(t, c.new, s)
			})
		}
	}
	return tg
}

// assertFallsThrough installs a provider the proxy does not have from a
// filesystem mirror configured beside the proxy's network mirror. Both
// clients list versions from every installation method and fail outright
// when one answers anything but 404 for a provider it lacks; a 404 lets the
// filesystem mirror's version be chosen and installed. (The filesystem
// mirror comes first: tofu and terraform ask methods for a package in
// order, and a network mirror that listed nothing still answers a
// version's archive index with an error, not "not found".)
func assertFallsThrough(t *testing.T, newCLI cliFactory, s *served) {
	t.Helper()
	fsMirror := t.TempDir()
	dir := filepath.Join(fsMirror, "example.com", "other", "hello")
	zip := "terraform-provider-hello_1.0.0_linux_amd64.zip"
	b, err := os.ReadFile(testenv.Testdata(t, "providers", "hello", "1.0.0", zip))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, zip), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cli := newCLI(t, fmt.Sprintf(`
provider_installation {
  filesystem_mirror {
    path = "%s"
  }
  network_mirror {
    url = "%s/v1/mirror/"
  }
}
`, fsMirror, s.URL))
	work := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "example.com/test/hello", "example.com/other/hello", 1)})
	out, err := cli.Try(t, work, "init", "-input=false", "-no-color")
	if err != nil || !strings.Contains(out, "Installed example.com/other/hello v1.0.0") {
		t.Fatalf("did not fall through to the filesystem mirror: %v\n%s", err, out)
	}
}

// Bounds on the proxy's requests through the throttling front while the
// four proxy installs run: each path is throttled once and retried once;
// beyond that a client install may fetch at most extraPerInstall more
// (its archive, a tag list or resolution whose cache entry expired); and
// the installs need at most maxThrottledPaths distinct registry paths
// (two versions' indexes, manifests and provenance; about 20 today).
const (
	extraPerInstall   = 3
	proxyInstalls     = 4
	maxThrottledPaths = 30
)

// latencyAnd429 puts the registry 30 ms away and answers the first request
// of every path with 429 Retry-After: 1. Pushes and the proxy must wait as
// told and succeed, without a retry storm.
func latencyAnd429(t *testing.T) *compatTarget {
	reg := testenv.StartRegistry(t)
	// The first request to each path is throttled, except the PUT that
	// completes an upload: every upload attempt gets a session path of its
	// own, so a first-per-path throttle there would refuse every attempt,
	// which no registry does (they throttle by rate). The upload's POST is
	// throttled, and retried.
	throttle := testenv.FaultRule{First: 1, PerPath: true, Fault: testenv.TooManyRequests(time.Second),
		Match: func(r *http.Request) bool { return r.Method != http.MethodPut && r.Method != http.MethodPatch }}
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Latency: 30 * time.Millisecond, Faults: []testenv.FaultRule{throttle}})
	tg := fronted(reg, front)
	// tofu's own OCI client does not retry (OpenTofu 1.12 uses a plain
	// HTTP client under oras-go), so its direct install runs unthrottled;
	// the push before it and the proxy after it are throttled.
	tg.beforeDirect = func() { front.SetFaults() }
	tg.beforeProxy = func() {
		front.SetFaults(throttle)
		front.ResetLog()
	}
	tg.checkEnd = func(t *testing.T, tg *compatTarget) {
		t.Run("retries-bounded", func(t *testing.T) {
			log := tg.front.Log()
			assertRetriesHonoured(t, log)
			throttled := tg.front.Count(func(e testenv.AccessEntry) bool { return e.Status == http.StatusTooManyRequests })
			t.Logf("the proxy sent %d requests through the throttling front, %d answered 429", len(log), throttled)
			if throttled > maxThrottledPaths {
				t.Errorf("the proxy asked for %d distinct paths, want at most %d", throttled, maxThrottledPaths)
			}
			if limit := 2*throttled + extraPerInstall*proxyInstalls; len(log) > limit {
				t.Errorf("the proxy sent %d requests through the throttling front, want at most %d", len(log), limit)
			}
		})
	}
	return tg
}

// assertRetriesHonoured checks that every 429 was followed by at most one
// retry of its path before a success, and not before Retry-After.
func assertRetriesHonoured(t *testing.T, log []testenv.AccessEntry) {
	t.Helper()
	throttledAt := map[string]time.Time{}
	var throttled int
	for _, e := range log {
		key := e.Method + " " + e.Path
		if e.Status == http.StatusTooManyRequests {
			throttled++
			throttledAt[key] = e.Time
			continue
		}
		if at, ok := throttledAt[key]; ok {
			if wait := e.Time.Sub(at); wait < 900*time.Millisecond {
				t.Errorf("%s retried %v after a 429 with Retry-After: 1", key, wait.Round(time.Millisecond))
			}
			delete(throttledAt, key)
		}
	}
	if throttled == 0 {
		t.Errorf("the proxy was never throttled")
	}
	for key := range throttledAt {
		t.Errorf("%s was throttled and never retried", key)
	}
}

// runCompat pushes the fixture, installs it straight from the registry,
// then through the proxy, with the case's hooks and checks.
func runCompat(t *testing.T, tg *compatTarget) {
	repo := tg.host + "/providers/test/hello"
	t.Run("push", func(t *testing.T) {
		for _, v := range compatVersions {
			if out, err := pushProvider(t, tg.credential(), repo, v); err != nil {
				t.Fatalf("oci-tofu push provider %s to %s: %v\n%s", v, repo, err, out)
			}
		}
	})
	ensurePushed(t, tg.reg)
	if tg.afterPush != nil {
		tg.afterPush(t, tg)
	}
	if tg.beforeDirect != nil {
		tg.beforeDirect()
	}
	t.Run("tofu-oci-mirror", func(t *testing.T) {
		tofu := testenv.Tofu(t, ociMirrorConfig(tg.host))
		testenv.WriteDockerConfig(t, filepath.Join(tofu.Home, ".docker"), tg.credential())
		assertInstalls(t, tofu, "example.com/test/hello")
	})
	if tg.beforeProxy != nil {
		tg.beforeProxy()
	}
	t.Run("proxy", func(t *testing.T) {
		s := startServeEnv(t, credentialEnv(t, tg.credential()),
			append([]string{"--provider-template", tg.host + "/providers/${namespace}/${type}"}, tg.serveArgs...)...)
		for _, c := range clis {
			t.Run("network-mirror/"+c.name, func(t *testing.T) {
				assertInstalls(t, c.new(t, networkMirrorConfig(s)), "example.com/test/hello")
			})
			t.Run("registry/"+c.name, func(t *testing.T) {
				assertInstalls(t, c.new(t, ""), s.Host+"/test/hello")
			})
		}
		if tg.checkProxy != nil {
			tg.checkProxy(t, tg, s)
		}
	})
	if tg.checkEnd != nil {
		tg.checkEnd(t, tg)
	}
}

// ensurePushed pushes the fixture versions the registry lacks straight to
// it, past any front: the later steps need them even when the push through
// the front failed (that failure is reported by the push subtest).
func ensurePushed(t *testing.T, reg *testenv.Registry) {
	t.Helper()
	repo := registryRepo(t, reg, "providers/test/hello")
	for _, v := range compatVersions {
		if _, err := repo.Resolve(context.Background(), v); err == nil {
			continue
		}
		if out, err := pushProvider(t, reg.Credential(), reg.Host+"/providers/test/hello", v); err != nil {
			t.Fatalf("pushing %s straight to the registry: %v\n%s", v, err, out)
		}
	}
}

// credential is the credential clients use for the target's host.
func (tg *compatTarget) credential() testenv.Credential {
	return testenv.Credential{Host: tg.host, Username: tg.user, Password: tg.pass}
}

// pushProvider pushes one fixture version with the real binary and a
// docker config holding cred.
func pushProvider(t *testing.T, cred testenv.Credential, repo, version string) (string, error) {
	t.Helper()
	key := "gpg-signer.asc"
	env := append(os.Environ(), "SSL_CERT_FILE="+testenv.NewCA(t).CertFile)
	env = append(env, credentialEnv(t, cred)...)
	return testenv.Run(t, "", env, ociTofu, "push", "provider", "--quiet", "--key", testenv.Testdata(t, "keys", key),
		testenv.Testdata(t, "providers", "hello", version), repo)
}

// credentialEnv points DOCKER_CONFIG at a new docker config holding cred,
// and clears the OCI_TOFU_ credential variables.
func credentialEnv(t *testing.T, cred testenv.Credential) []string {
	t.Helper()
	return []string{"DOCKER_CONFIG=" + testenv.WriteDockerConfig(t, t.TempDir(), cred), "OCI_TOFU_USERNAME=", "OCI_TOFU_PASSWORD="}
}

// assertInstalls runs init for a configuration requiring addr "~> 1.0" and
// checks that the newest fixture version was installed.
func assertInstalls(t *testing.T, cli *testenv.CLI, addr string) {
	t.Helper()
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "~> 1.0"), "example.com/test/hello", addr, 1)})
	newest := compatVersions[len(compatVersions)-1]
	out := cli.Run(t, dir, "init", "-input=false", "-no-color")
	if !strings.Contains(out, "Installed "+addr+" v"+newest) {
		t.Fatalf("%s %s not installed:\n%s", addr, newest, out)
	}
	lockEntry(t, dir, addr, newest)
}

// getJSON decodes a 200 answer of the proxy.
func getJSON(t *testing.T, s *served, path string, v any) {
	t.Helper()
	code, body := s.get(t, path)
	if code != http.StatusOK {
		t.Fatalf("%s: %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, body)
	}
}

// assertJSONError checks that the proxy answers path with a status in
// [lo, hi] and a JSON error document.
func assertJSONError(t *testing.T, s *served, path string, lo, hi int) {
	t.Helper()
	resp, err := s.client.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Errors []string `json:"errors"`
	}
	decodeErr := json.NewDecoder(resp.Body).Decode(&doc)
	if resp.StatusCode < lo || resp.StatusCode > hi {
		t.Errorf("%s: status %d %v, want %d–%d", path, resp.StatusCode, doc.Errors, lo, hi)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || decodeErr != nil || len(doc.Errors) == 0 {
		t.Errorf("%s: not a JSON error document (%s, %v)", path, resp.Header.Get("Content-Type"), decodeErr)
	}
}
