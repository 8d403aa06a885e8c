package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// pullThroughArgs are serve's flags for pulling providers through from
// origin: as example.com (the network mirror needs a hostname without a
// port; the providers.v1 URL is given as a CLI configuration's host block
// would) and under its own name, which the registry protocol pulls from
// under the proxy's own host name (localhost, as s.Host names it: the
// registry protocol drops the port), which serve must be told.
func pullThroughArgs(reg *testenv.Registry, origin *testenv.Origin, extra ...string) []string {
	return append([]string{
		"--provider-template", reg.Host + "/pulled/${hostname}/${namespace}/${type}",
		"--pull-through-origin", "example.com=" + origin.ProvidersURL(),
		"--pull-through-origin", origin.Host,
		"--pull-through-registry-origin", origin.Host,
		"--registry-hostname", "localhost",
	}, extra...)
}

// tagDigest resolves a tag, or "" when it does not exist.
func tagDigest(t *testing.T, reg *testenv.Registry, repo, tag string) string {
	t.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	r, err := client.OpenReadOnly(context.Background(), oci.Reference{Registry: reg.Host, Repository: repo})
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Resolve(context.Background(), tag)
	if err != nil {
		if oci.IsNotFound(err) {
			return ""
		}
		t.Fatal(err)
	}
	return d.Digest.String()
}

// waitForTag waits until pull-through has tagged a version (it completes
// the release's other platforms in the background after the install).
func waitForTag(t *testing.T, reg *testenv.Registry, repo, tag string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if d := tagDigest(t, reg, repo, tag); d != "" {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s:%s was never tagged", repo, tag)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mirroredDigest is the index digest `oci-tofu mirror` pushes for a
// provider version of origin.
func mirroredDigest(t *testing.T, reg *testenv.Registry, origin *testenv.Origin, ns, typ, version string) string {
	t.Helper()
	mustRun(t, "mirror", "--quiet", "--provider-template", reg.Host+"/mirrored/${namespace}/${type}",
		fmt.Sprintf("%s/%s/%s@= %s", origin.Host, ns, typ, version))
	return tagDigest(t, reg, "mirrored/"+ns+"/"+typ, version)
}

// waitForLog waits for the proxy's log (copied from its output as it
// comes) to mention want.
func waitForLog(t *testing.T, s *served, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.logs.String(), want); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("the log does not mention %q:\n%s", want, s.logs.String())
			return
		}
	}
}

// originGets counts the origin's GETs of one release file.
func originGets(origin *testenv.Origin, file string) int {
	return origin.Count(func(p string) bool { return strings.HasSuffix(p, "/"+file) })
}

func helloZip(version, platform string) string {
	return "terraform-provider-hello_" + version + "_" + platform + ".zip"
}

var helloPlatforms = []string{"darwin_arm64", "linux_amd64", "linux_arm64", "windows_amd64"}

// First installs with tofu and terraform, through the network mirror and
// through the registry protocol, fetch each release from the origin
// registry (GnuPG-signed fixtures, TLS), once per archive; the registry
// then holds it with the very digest `oci-tofu mirror` pushes for it,
// provenance included. With the origin stopped, installs in fresh
// directories still succeed, from the registry.
func TestPullThroughProviders(t *testing.T) {
	origin := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	// Short listing and tag TTLs, so the outage shows in listings soon.
	s := startServe(t, pullThroughArgs(reg, origin, "--pull-through-listing-ttl", "1s", "--tag-ttl", "1s", "--max-stale", "-1s")...)
	registryAddr := s.Host + "/test/hello"
	type install struct {
		name, cli, version, addr, repo string
		cliConfig                      string
	}
	installs := []install{
		{"tofu network mirror", "tofu", "1.1.0", "example.com/test/hello", "pulled/example.com/test/hello", networkMirrorConfig(s)},
		{"terraform network mirror", "terraform", "1.0.0", "example.com/test/hello", "pulled/example.com/test/hello", networkMirrorConfig(s)},
		{"tofu registry protocol", "tofu", "1.0.0", registryAddr, "pulled/localhost/test/hello", ""},
		{"terraform registry protocol", "terraform", "1.1.0", registryAddr, "pulled/localhost/test/hello", ""},
	}
	newCLI := func(t *testing.T, name, cfg string) *testenv.CLI {
		if name == "terraform" {
			return testenv.Terraform(t, cfg)
		}
		return testenv.Tofu(t, cfg)
	}
	config := func(addr, version string) string {
		return strings.Replace(fmt.Sprintf(helloConfig, version), "example.com/test/hello", addr, 1)
	}
	mirrored := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		mirrored[v] = mirroredDigest(t, reg, origin, "test", "hello", v)
	}
	origin.ResetLog()
	for _, in := range installs {
		t.Run("first "+in.name, func(t *testing.T) {
			before := map[string]int{}
			for _, p := range helloPlatforms {
				before[p] = originGets(origin, helloZip(in.version, p))
			}
			cli := newCLI(t, in.cli, in.cliConfig)
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": config(in.addr, in.version)})
			out := cli.Run(t, dir, "init", "-input=false", "-no-color")
			if !strings.Contains(out, "Installed "+in.addr+" v"+in.version) {
				t.Fatalf("not installed:\n%s", out)
			}
			lockEntry(t, dir, in.addr, in.version)
			got := waitForTag(t, reg, in.repo, in.version)
			if got != mirrored[in.version] {
				t.Errorf("pulled %s:%s is %s, `oci-tofu mirror` pushes %s", in.repo, in.version, got, mirrored[in.version])
			}
			for _, p := range helloPlatforms {
				if n := originGets(origin, helloZip(in.version, p)) - before[p]; n != 1 {
					t.Errorf("%s was downloaded from the origin %d times, want once", helloZip(in.version, p), n)
				}
			}
		})
	}
	prov := readProvenance(t, reg, "pulled/example.com/test/hello", "1.1.0")
	if prov.Platforms["linux_amd64"].H1 == "" || len(prov.Platforms) != 4 || len(prov.SigningKeyIDs) != 1 {
		t.Errorf("provenance of the pulled release: %+v", prov)
	}

	origin.Stop()
	origin.ResetLog()
	for _, in := range installs {
		t.Run("origin down "+in.name, func(t *testing.T) {
			cli := newCLI(t, in.cli, in.cliConfig)
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": config(in.addr, in.version)})
			out := cli.Run(t, dir, "init", "-input=false", "-no-color")
			if !strings.Contains(out, "Installed "+in.addr+" v"+in.version) {
				t.Fatalf("not installed:\n%s", out)
			}
		})
	}
	// Once the origin's listing has expired, listings answer what the
	// registry holds, say why (registry protocol warnings), log and count it.
	time.Sleep(2100 * time.Millisecond)
	if code, body := s.get(t, "/v1/mirror/example.com/test/hello/index.json"); code != 200 || !strings.Contains(string(body), "1.1.0") {
		t.Errorf("index.json with the origin down: %d %s", code, body)
	}
	if code, body := s.get(t, "/v1/providers/test/hello/versions"); code != 200 || !strings.Contains(string(body), "1.0.0") || !strings.Contains(string(body), "unavailable") {
		t.Errorf("versions with the origin down: %d %s", code, body)
	}
	if code, body := s.get(t, "/v1/mirror/example.com/test/other/index.json"); code != http.StatusBadGateway || !strings.Contains(string(body), "unreachable") {
		t.Errorf("a provider the registry does not hold, with the origin down: %d %s", code, body)
	}
	waitForLog(t, s, "listing only what the registry holds")
	_, metrics := s.get(t, "/metrics")
	for _, want := range []string{
		`oci_tofu_proxy_pullthrough_listings_without_origin_total{kind="provider"}`,
		`oci_tofu_proxy_pullthrough_origin_errors_total{failure="unreachable",kind="provider"}`,
		`oci_tofu_proxy_pullthrough_releases_total{kind="provider",result="stored"} 4`,
		`oci_tofu_proxy_pullthrough_origin_downloads_total{kind="provider"} 16`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// A tampered package or a signature by another key fails the install and
// leaves no tag; the failure is remembered, so a retry does not reach the
// origin again. (Whether the client's transfer is cut mid-stream or
// answered 502 depends on whether the small fixture has fully arrived
// when it asks; protocol/proxy's tests cut a slow one mid-stream.)
func TestPullThroughRefusesTamperedReleases(t *testing.T) {
	gpgKey := testenv.Testdata(t, "keys", "gpg-signer.asc")
	tampered := copyDir(t, testenv.Testdata(t, "providers", "hello", "1.0.0"))
	appendTo(t, filepath.Join(tampered, helloZip("1.0.0", "linux_amd64")), "x")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "evil", Type: "hello", Dir: tampered, Key: gpgKey},
		{Namespace: "wrongkey", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.0.0"), Key: testenv.Testdata(t, "keys", "other.asc")},
	})
	reg := testenv.StartRegistry(t)
	s := startServe(t, pullThroughArgs(reg, origin)...)
	for _, c := range []struct{ ns, want string }{{"evil", "failure=tampered"}, {"wrongkey", "signature does not verify"}} {
		t.Run(c.ns, func(t *testing.T) {
			addr := "example.com/" + c.ns + "/hello"
			for attempt := 1; attempt <= 2; attempt++ {
				before := originGets(origin, helloZip("1.0.0", "linux_amd64"))
				tofu := testenv.Tofu(t, networkMirrorConfig(s))
				dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "example.com/test/hello", addr, 1)})
				out, err := tofu.Try(t, dir, "init", "-input=false", "-no-color")
				if err == nil {
					t.Fatalf("attempt %d: tofu installed a bad release:\n%s", attempt, out)
				}
				if attempt == 2 && originGets(origin, helloZip("1.0.0", "linux_amd64")) != before {
					t.Errorf("the retry reached the origin again")
				}
			}
			waitForLog(t, s, c.want) // the pull has ended
			assertNoTags(t, reg, reg.Host+"/pulled/example.com/"+c.ns+"/hello")
		})
	}
	_, metrics := s.get(t, "/metrics")
	for _, want := range []string{
		`oci_tofu_proxy_pullthrough_releases_total{kind="provider",result="tampered"} 2`,
		`oci_tofu_proxy_pullthrough_remembered_failures_total{kind="provider"}`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// Twenty first installs at once of a version the registry does not hold
// download each archive from the origin once.
func TestPullThroughConcurrentFirstInstalls(t *testing.T) {
	origin := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	s := startServe(t, pullThroughArgs(reg, origin)...)
	const clients = 20
	var wg sync.WaitGroup
	errs := make([]error, clients)
	outs := make([]string, clients)
	for i := range clients {
		tofu := testenv.Tofu(t, networkMirrorConfig(s))
		dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "1.1.0")})
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = tofu.Try(t, dir, "init", "-input=false", "-no-color")
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("install %d: %v\n%s", i, err, outs[i])
		}
	}
	waitForTag(t, reg, "pulled/example.com/test/hello", "1.1.0")
	for _, p := range helloPlatforms {
		if n := originGets(origin, helloZip("1.1.0", p)); n != 1 {
			t.Errorf("%s was downloaded from the origin %d times, want once", helloZip("1.1.0", p), n)
		}
	}
	for _, f := range []string{"terraform-provider-hello_1.1.0_SHA256SUMS", "terraform-provider-hello_1.1.0_SHA256SUMS.sig"} {
		if n := originGets(origin, f); n != 1 {
			t.Errorf("%s was read from the origin %d times, want once", f, n)
		}
	}
}

// A host outside the allow-list is never contacted, whichever path names
// it; the registry protocol without --pull-through-registry-origin serves
// only what the registry holds.
func TestPullThroughAllowList(t *testing.T) {
	allowed := startHelloOrigin(t)
	other := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	s := startServe(t, "--provider-template", reg.Host+"/pulled/${hostname}/${namespace}/${type}",
		"--pull-through-origin", "example.com="+allowed.ProvidersURL())
	sums := strings.Repeat("0", 64)
	for _, path := range []string{
		"/v1/mirror/" + other.Host + "/test/hello/index.json",
		"/v1/mirror/" + other.Host + "/test/hello/1.0.0.json",
		"/v1/mirror/" + strings.Replace(other.Host, ":", "%3A", 1) + "/test/hello/index.json",
		"/v1/pull/m/" + other.Host + "/test/hello/1.0.0/" + sums + "/" + helloZip("1.0.0", "linux_amd64"),
		"/v1/pull/r/" + other.Host + "/test/hello/1.0.0/" + sums + "/" + helloZip("1.0.0", "linux_amd64"),
		"/v1/pull/r/localhost/test/hello/1.0.0/" + sums + "/" + helloZip("1.0.0", "linux_amd64"),
		"/v1/pull/x/example.com/test/hello/1.0.0/" + sums + "/" + helloZip("1.0.0", "linux_amd64"),
		"/v1/providers/test/hello/versions",
		"/v1/providers/test/hello/1.0.0/download/linux/amd64",
	} {
		if code, body := s.get(t, path); code != http.StatusNotFound && code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	if reqs := other.Requests(); len(reqs) > 0 {
		t.Errorf("a host outside the allow-list was contacted: %+v", reqs)
	}
	if reqs := allowed.Requests(); len(reqs) > 0 {
		t.Errorf("the allowed origin was contacted for requests not naming it: %+v", reqs)
	}
	// The allowed one is, through its name.
	if code, body := s.get(t, "/v1/mirror/example.com/test/hello/index.json"); code != 200 || !strings.Contains(string(body), "1.1.0") {
		t.Errorf("allowed origin: %d %s", code, body)
	}
}

// Pull-through writes to the registry: without credentials allowed to
// push, serve refuses to start and says why; with them it starts.
func TestPullThroughNeedsPushCredentials(t *testing.T) {
	origin := startHelloOrigin(t)
	for _, start := range []testenv.RegistryStarter{
		{Kind: "htpasswd", Start: func(t testing.TB) *testenv.Registry {
			return testenv.StartRegistryWithAuth(t, "registry-user", "registry-Pa55")
		}},
		{Kind: testenv.KindTokenAuth, Start: func(t testing.TB) *testenv.Registry { return testenv.StartTokenRegistry(t, "token-user", "token-Pa55") }},
	} {
		t.Run(start.Kind, func(t *testing.T) {
			reg := start.Start(t)
			args := append([]string{"serve", "--listen", "127.0.0.1:0", "--insecure-no-tls"}, pullThroughArgs(reg, origin)...)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, ociTofu, args...)
			cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+testenv.NewCA(t).CertFile, "DOCKER_CONFIG="+t.TempDir())
			out, err := cmd.CombinedOutput()
			if err == nil || ctx.Err() != nil || !strings.Contains(string(out), "refuses the proxy's pushes") || !strings.Contains(string(out), "without pull-through") {
				t.Fatalf("serve without push credentials: %v\n%s", err, out)
			}
			// With the registry's credentials it serves, and pulls.
			docker := t.TempDir()
			testenv.WriteDockerConfig(t, docker, reg.Credential())
			s := startServeEnv(t, []string{"DOCKER_CONFIG=" + docker}, pullThroughArgs(reg, origin)...)
			tofu := testenv.Tofu(t, networkMirrorConfig(s))
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "1.0.0")})
			tofu.Run(t, dir, "init", "-input=false", "-no-color")
		})
	}
}

// SIGTERM while a release is being pulled through: serve stops taking
// requests, lets the pull finish storing the release (tagged, in the
// registry), and exits 0 — the origin 700 ms away for every file.
func TestServeFinishesPullsOnShutdown(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	origin := testenv.StartOriginWith(t, []testenv.OriginRelease{
		{Namespace: "test", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.0.0"), Key: key},
	}, testenv.OriginOptions{Latency: 700 * time.Millisecond})
	reg := testenv.StartRegistry(t)
	s := startServe(t, pullThroughArgs(reg, origin)...)
	zip := archiveURL(t, s, "/v1/mirror/example.com/test/hello/1.0.0.json", "linux_amd64")
	if code, body := s.get(t, zip); code != http.StatusOK || len(body) == 0 {
		t.Fatalf("the first archive: %d", code)
	}
	// The other platforms are still on their way from the origin.
	if d := tagDigest(t, reg, "pulled/example.com/test/hello", "1.0.0"); d != "" {
		t.Fatalf("tagged before the other platforms arrived: %s", d)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("serve did not stop within 15s of SIGTERM:\n%s", s.logs)
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("serve exited with %d:\n%s", code, s.logs)
	}
	if tagDigest(t, reg, "pulled/example.com/test/hello", "1.0.0") == "" {
		t.Errorf("the release being pulled was not stored before serve exited:\n%s", s.logs)
	}
}
