package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// served is a running `oci-tofu serve` (the built binary) on 127.0.0.1.
type served struct {
	Host   string // localhost:PORT, as clients name it
	URL    string // https://localhost:PORT
	client *http.Client
	cmd    *exec.Cmd
	done   chan struct{}
	logs   *testenv.LockedBuffer
}

// startServe starts the proxy with the test CA's server certificate; it
// is stopped with SIGTERM when the test ends and must exit cleanly.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	return startServeEnv(t, nil, args...)
}

// startServeEnv is startServe with extra environment variables (which win
// over the defaults), e.g. a DOCKER_CONFIG holding registry credentials.
func startServeEnv(t *testing.T, env []string, args ...string) *served {
	t.Helper()
	return startServeOn(t, testenv.FreePort(t), env, args...)
}

// startServeOn is startServeEnv on a port the caller chose (to name the
// proxy's own host:port in its arguments).
func startServeOn(t *testing.T, port int, env []string, args ...string) *served {
	t.Helper()
	ca := testenv.NewCA(t)
	all := append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls-cert", ca.ServerCertFile, "--tls-key", ca.ServerKeyFile, "--shutdown-timeout", "10s"}, args...)
	cmd := exec.Command(ociTofu, all...)
	cmd.Env = append(append(os.Environ(), "SSL_CERT_FILE="+ca.CertFile, "DOCKER_CONFIG="+t.TempDir()), env...)
	return launchServe(t, cmd, port)
}

// launchServe starts cmd, an `oci-tofu serve` listening on 127.0.0.1:port
// with the test CA's server certificate, and waits until /healthz
// answers; it is stopped with SIGTERM when the test ends and must exit
// cleanly.
func launchServe(t *testing.T, cmd *exec.Cmd, port int) *served {
	t.Helper()
	ca := testenv.NewCA(t)
	// Tests stop their proxy at once: the drain delay Kubernetes needs
	// (--shutdown-delay, default 5s) is tested by TestDrainOnSIGTERM. A
	// value given by the test (environment or flag) wins.
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	if !slices.ContainsFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "OCI_TOFU_SHUTDOWN_DELAY=") }) {
		cmd.Env = append(cmd.Env, "OCI_TOFU_SHUTDOWN_DELAY=0s")
	}
	s := &served{Host: fmt.Sprintf("localhost:%d", port), logs: &testenv.LockedBuffer{}, client: ca.HTTPClient(), cmd: cmd, done: make(chan struct{})}
	s.URL = "https://" + s.Host
	if s.cmd.Stdout == nil { // a test may hand in its own (TestAuditToAPipeNobodyReads)
		s.cmd.Stdout = s.logs
	}
	s.cmd.Stderr = s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
			if code := s.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("oci-tofu serve exited with %d after SIGTERM:\n%s", code, s.logs.String())
			}
		case <-time.After(15 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
			t.Errorf("oci-tofu serve did not stop on SIGTERM")
		}
		if t.Failed() {
			t.Logf("oci-tofu serve log:\n%s", s.logs.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := s.client.Get(s.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		select {
		case <-s.done:
			t.Fatalf("oci-tofu serve exited:\n%s", s.logs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("oci-tofu serve did not become healthy:\n%s", s.logs.String())
	return nil
}

func (s *served) get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	resp, err := s.client.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func networkMirrorConfig(s *served) string {
	return fmt.Sprintf(`
provider_installation {
  network_mirror {
    url = "%s/v1/mirror/"
  }
}
`, s.URL)
}

// pushHello pushes fixture releases with the real binary.
func pushHello(t *testing.T, repo string, versions ...string) {
	t.Helper()
	for _, v := range versions {
		key := "gpg-signer.asc"
		if v == "2.0.0-rc1" {
			key = "gocrypto-signer.asc"
		}
		mustRun(t, "push", "provider", "--quiet", "--key", testenv.Testdata(t, "keys", key), testenv.Testdata(t, "providers", "hello", v), repo)
	}
}

func lockEntry(t *testing.T, dir, addr, version string) *lockfile.Provider {
	t.Helper()
	lock, err := lockfile.Read(dir + "/.terraform.lock.hcl")
	if err != nil {
		t.Fatal(err)
	}
	e := lock.Provider(addr)
	if e == nil || e.Version != version {
		t.Fatalf("lock file has no %s %s: %+v", addr, version, lock.Providers)
	}
	return e
}

type cliFactory func(testing.TB, string) *testenv.CLI

var clis = []struct {
	name string
	new  cliFactory
}{
	{"tofu", testenv.Tofu},
	{"terraform", testenv.Terraform},
}

// Real tofu and terraform install through the proxy's network mirror; the
// lock file's zh is the zip's sha256 (its OCI digest), and its h1 the one
// the packer stored.
func TestServeNetworkMirror(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "1.1.0")
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}")
	prov := readProvenance(t, reg, "providers/test/hello", "1.1.0")
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.new(t, networkMirrorConfig(s))
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "~> 1.0")})
			out := cli.Run(t, dir, "init", "-input=false", "-no-color")
			if !strings.Contains(out, "Installed example.com/test/hello v1.1.0") {
				t.Fatalf("unexpected output:\n%s", out)
			}
			e := lockEntry(t, dir, "example.com/test/hello", "1.1.0")
			zh := "zh:" + fixtureZipSHA(t, "1.1.0", "linux_amd64")
			if !slices.Contains(e.Hashes, prov.Platforms["linux_amd64"].H1) {
				t.Errorf("lock hashes %v lack the stored h1 %s", e.Hashes, prov.Platforms["linux_amd64"].H1)
			}
			// Terraform records only the hash it verified from a network
			// mirror (h1, its preferred one); tofu records zh as well.
			if c.name == "tofu" && !slices.Contains(e.Hashes, zh) {
				t.Errorf("lock hashes %v lack %s", e.Hashes, zh)
			}
			for _, h := range e.Hashes {
				if strings.HasPrefix(h, "zh:") && h != zh {
					t.Errorf("lock hash %s is not the zip's sha256", h)
				}
			}
		})
	}
}

// Real tofu and terraform use the proxy as the origin registry of
// localhost:PORT/test/hello and verify the publisher's signature; the lock
// file gets every platform's zh from the original SHA256SUMS.
func TestServeOriginRegistry(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "2.0.0-rc1")
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}")
	sums, err := os.ReadFile(testenv.Testdata(t, "providers", "hello", "1.0.0", "terraform-provider-hello_1.0.0_SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := sha256sums.Parse(sums)
	if err != nil {
		t.Fatal(err)
	}
	var wantZH []string
	for name, sum := range parsed {
		if strings.HasSuffix(name, ".zip") {
			wantZH = append(wantZH, "zh:"+sum)
		}
	}
	addr := s.Host + "/test/hello"
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.new(t, "")
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "example.com/test/hello", addr, 1)})
			out := cli.Run(t, dir, "init", "-input=false", "-no-color")
			if !strings.Contains(out, "Installed "+addr+" v1.0.0") || !strings.Contains(out, "signed") {
				t.Fatalf("not installed as signed:\n%s", out)
			}
			e := lockEntry(t, dir, addr, "1.0.0")
			for _, zh := range wantZH {
				if !slices.Contains(e.Hashes, zh) {
					t.Errorf("lock hashes %v lack %s from SHA256SUMS", e.Hashes, zh)
				}
			}
		})
	}
}

// OpenTofu 1.12 reads the download answer's packages object and records
// every platform's hashes in the lock file — for providers whose origin
// need not sign them (registry.opentofu.org; for other hosts it records
// only what the signature covers, internal/providercache/installer.go).
// With the proxy standing in for registry.opentofu.org (a host block), one
// plain `tofu init` writes every platform's h1.
func TestServeRegistryPackagesObject(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--registry-hostname", "registry.opentofu.org")
	var d wire.RegistryDownload
	code, body := s.get(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64")
	if err := json.Unmarshal(body, &d); code != 200 || err != nil {
		t.Fatalf("%d %s", code, body)
	}
	if len(d.Packages) != 4 {
		t.Fatalf("packages must cover every platform: %+v", d.Packages)
	}
	for plat, pkg := range d.Packages {
		zip, err := os.ReadFile(testenv.Testdata(t, "providers", "hello", "1.0.0", "terraform-provider-hello_1.0.0_"+plat+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		if pkg.PackageSize != int64(len(zip)) || !slices.Contains(pkg.Hashes, "zh:"+sha256Hex(zip)) {
			t.Errorf("%s: %+v", plat, pkg)
		}
	}
	tofu := testenv.Tofu(t, fmt.Sprintf(`
host "registry.opentofu.org" {
  services = {
    "providers.v1" = "%s/v1/providers/"
  }
}
`, s.URL))
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "example.com/test/hello", "test/hello", 1)})
	tofu.Run(t, dir, "init", "-input=false", "-no-color")
	e := lockEntry(t, dir, "registry.opentofu.org/test/hello", "1.0.0")
	for _, h1 := range fixtureH1s(t, "1.0.0") {
		if !slices.Contains(e.Hashes, h1) {
			t.Errorf("lock hashes %v lack %s: the packages object was not honoured", e.Hashes, h1)
		}
	}
}

// fixtureH1s are the h1 hashes of every platform of a fixture release.
func fixtureH1s(t *testing.T, version string) []string {
	t.Helper()
	zips, err := filepath.Glob(testenv.Testdata(t, "providers", "hello", version, "*.zip"))
	if err != nil || len(zips) == 0 {
		t.Fatalf("fixture zips: %v", err)
	}
	var out []string
	for _, z := range zips {
		h1, err := pkghash.ZipFileH1(z)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h1)
	}
	return out
}

// An artifact assembled by a third-party tool (no provenance): served
// through the mirror with zh hashes; through the registry protocol only
// with an operator signing key, whose signature real tofu verifies.
func TestServeThirdPartyArtifact(t *testing.T) {
	reg := testenv.StartRegistry(t)
	zip, err := os.ReadFile(testenv.Testdata(t, "providers", "hello", "1.0.0", "terraform-provider-hello_1.0.0_linux_amd64.zip"))
	if err != nil {
		t.Fatal(err)
	}
	pushThirdParty(t, reg, "providers/third/hello", "1.0.0", "linux", "amd64", zip)
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}",
		"--signing-key", testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	zh := "zh:" + fixtureZipSHA(t, "1.0.0", "linux_amd64")

	tofu := testenv.Tofu(t, networkMirrorConfig(s))
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "example.com/test/hello", "example.com/third/hello", 1)})
	tofu.Run(t, dir, "init", "-input=false", "-no-color")
	if e := lockEntry(t, dir, "example.com/third/hello", "1.0.0"); !slices.Contains(e.Hashes, zh) {
		t.Errorf("mirror lock hashes %v lack %s", e.Hashes, zh)
	}

	addr := s.Host + "/third/hello"
	tofu = testenv.Tofu(t, "")
	dir = testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "example.com/test/hello", addr, 1)})
	out := tofu.Run(t, dir, "init", "-input=false", "-no-color")
	signer, _ := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if !strings.Contains(out, "signed") || !strings.Contains(out, signer.KeyID()) {
		t.Errorf("not verified with the operator key %s:\n%s", signer.KeyID(), out)
	}
	if e := lockEntry(t, dir, addr, "1.0.0"); !slices.Contains(e.Hashes, zh) {
		t.Errorf("registry lock hashes %v lack %s", e.Hashes, zh)
	}

	// Without a signing key the registry protocol explains itself.
	plain := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}")
	code, body := plain.get(t, "/v1/providers/third/hello/1.0.0/download/linux/amd64")
	if code != http.StatusConflict || !strings.Contains(string(body), "network mirror protocol only") {
		t.Errorf("unsigned download: %d %s", code, body)
	}
}

// pushThirdParty writes a provider as OpenTofu's docs describe it for
// third-party tools: one platform manifest with the empty config and an
// archive/zip layer, under an index; crafted JSON, pushed with oras-go.
func pushThirdParty(t *testing.T, reg *testenv.Registry, repoName, tag, goos, arch string, zip []byte) {
	t.Helper()
	ctx := context.Background()
	repo := registryRepo(t, reg, repoName)
	pushBytes := func(mt string, b []byte) ocispec.Descriptor {
		d := ocispec.Descriptor{MediaType: mt, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if err := repo.Push(ctx, d, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	pushBytes("application/vnd.oci.empty.v1+json", []byte("{}"))
	layer := pushBytes("archive/zip", zip)
	manifest := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.opentofu.provider-target","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2,"data":"e30="},"layers":[{"mediaType":"archive/zip","digest":"%s","size":%d}]}`, layer.Digest, layer.Size)
	md := pushBytes(ocispec.MediaTypeImageManifest, []byte(manifest))
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": ocispec.MediaTypeImageIndex, "artifactType": "application/vnd.opentofu.provider",
		"manifests": []map[string]any{{
			"mediaType": md.MediaType, "digest": md.Digest, "size": md.Size,
			"artifactType": "application/vnd.opentofu.provider-target",
			"platform":     map[string]string{"os": goos, "architecture": arch},
		}},
	})
	id := pushBytes(ocispec.MediaTypeImageIndex, index)
	if err := repo.Tag(ctx, id, tag); err != nil {
		t.Fatal(err)
	}
}

// With the registry gone, the proxy answers 5xx with a clear message,
// never 404 and never stale success past the tag TTL.
func TestServeRegistryDown(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--tag-ttl", "1ms", "--upstream-timeout", "3s")
	if code, body := s.get(t, "/v1/mirror/example.com/test/hello/index.json"); code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	reg.Stop()
	// A document already served stays served (stale) while the registry is
	// down, for at most --max-stale; anything not yet seen fails with 5xx.
	if code, body := s.get(t, "/v1/mirror/example.com/test/hello/index.json"); code != 200 || !strings.Contains(string(body), "1.0.0") {
		t.Errorf("a document seen before, with the registry down: %d %s", code, body)
	}
	for _, path := range []string{
		"/v1/mirror/example.com/test/hello/1.0.0.json",
		"/v1/mirror/example.com/test/other/index.json",
		"/v1/providers/test/hello/versions",
	} {
		code, body := s.get(t, path)
		if code < 500 || code > 504 || !strings.Contains(string(body), "OCI registry") {
			t.Errorf("%s with the registry down: %d %s", path, code, body)
		}
	}
	// Metrics count the upstream errors.
	_, metrics := s.get(t, "/metrics")
	if !strings.Contains(string(metrics), "oci_tofu_proxy_upstream_errors_total") {
		t.Errorf("no upstream error metric")
	}
}
