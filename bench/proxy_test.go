package bench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// BenchmarkProxy measures `oci-tofu serve` beside its references, over TLS
// on loopback, in one run:
//
//   - warm <version>.json requests/s through the proxy vs nginx serving the
//     same JSON as a static file (json-proxy/nginx, goal ≥ 0.5);
//   - streaming a 256 MiB archive through the proxy vs straight from the
//     registry's blob endpoint (stream-proxy/registry, goal ≥ 0.8);
//   - the proxy's peak RSS during 8 concurrent 256 MiB downloads (goal
//     < 100 MiB: nothing is buffered).
func BenchmarkProxy(b *testing.B) {
	const archiveSize = 256 << 20
	reg := testenv.StartRegistry(b)
	ca := reg.CA
	bin := proxyBuildBinary(b)
	zipDigest := proxyPushBigProvider(b, reg, "bench/acme/big", archiveSize)

	port := testenv.FreePort(b)
	proxyURL := fmt.Sprintf("https://localhost:%d", port)
	cmd := exec.Command(bin, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls-cert", ca.ServerCertFile, "--tls-key", ca.ServerKeyFile,
		"--provider-template", reg.Host+"/bench/${namespace}/${type}", "--log-level", "error")
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+ca.CertFile, "DOCKER_CONFIG="+b.TempDir())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	client := proxyClient(ca)
	proxyWaitHealthy(b, client, proxyURL)

	versionPath := "/v1/mirror/example.com/acme/big/1.0.0.json"
	body := proxyGet(b, client, proxyURL+versionPath)
	nginxURL, stopNginx := proxyStartNginx(b, ca, versionPath, body)
	defer stopNginx()
	if got := proxyGet(b, client, nginxURL+versionPath); string(got) != string(body) {
		b.Fatalf("nginx serves %q", got)
	}
	archiveURL := proxyURL + "/v1/" + strings.TrimPrefix(proxyArchiveURL(b, body), "../../../../")
	blobURL := fmt.Sprintf("https://%s/v2/bench/acme/big/blobs/%s", reg.Host, zipDigest)

	b.ResetTimer()
	var jsonProxy, jsonNginx, streamProxy, streamReg float64
	for i := 0; i < b.N; i++ {
		jsonProxy += proxyLoad(b, client, proxyURL+versionPath, 32, 3*time.Second)
		jsonNginx += proxyLoad(b, client, nginxURL+versionPath, 32, 3*time.Second)
		streamReg += proxyStream(b, client, blobURL, archiveSize)
		streamProxy += proxyStream(b, client, archiveURL, archiveSize)
	}
	n := float64(b.N)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); proxyStream(b, proxyClient(ca), archiveURL, archiveSize) }()
	}
	wg.Wait()
	b.StopTimer()
	rss := proxyPeakRSS(b, cmd.Process.Pid)
	b.ReportMetric(jsonProxy/n, "json-proxy-req/s")
	b.ReportMetric(jsonNginx/n, "json-nginx-req/s")
	b.ReportMetric(jsonProxy/jsonNginx, "json-proxy/nginx")
	b.ReportMetric(streamProxy/n, "stream-proxy-MiB/s")
	b.ReportMetric(streamReg/n, "stream-registry-MiB/s")
	b.ReportMetric(streamProxy/streamReg, "stream-proxy/registry")
	b.ReportMetric(rss, "proxy-peak-RSS-MiB")
	b.ReportMetric(0, "ns/op")
}

func proxyBuildBinary(b *testing.B) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), "oci-tofu")
	cmd := exec.Command("go", "build", "-o", out, "../cmd/oci-tofu")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	return out
}

// proxyPushBigProvider pushes one linux_amd64 package of n random bytes
// (the proxy never opens the zip, so its content need not be a zip).
func proxyPushBigProvider(b *testing.B, reg *testenv.Registry, repoName string, n int64) digest.Digest {
	b.Helper()
	path := filepath.Join(b.TempDir(), "big.zip")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	h := digest.SHA256.Digester()
	if _, err := io.CopyN(io.MultiWriter(f, h.Hash()), rand.Reader, n); err != nil {
		b.Fatal(err)
	}
	f.Close()
	a, err := oci.BuildProvider([]oci.ProviderPackage{{
		Platform: oci.Platform{OS: "linux", Arch: "amd64"},
		Zip:      ocispec.Descriptor{MediaType: oci.MediaTypeZip, Digest: h.Digest(), Size: n},
		Open:     func() (io.ReadCloser, error) { return os.Open(path) },
	}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		b.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: repoName})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := oci.Push(context.Background(), repo, a, []string{"1.0.0"}, oci.PushOptions{}); err != nil {
		b.Fatal(err)
	}
	return h.Digest()
}

// proxyClient is one HTTP/1.1 keep-alive client for both servers under
// comparison, so protocol differences do not skew the ratio.
func proxyClient(ca *testenv.CA) *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: ca.Pool, NextProtos: []string{"http/1.1"}},
		MaxIdleConnsPerHost: 64,
		DisableCompression:  true,
	}}
}

func proxyWaitHealthy(b *testing.B, c *http.Client, base string) {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := c.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
	}
	b.Fatal("proxy did not start")
}

func proxyGet(b *testing.B, c *http.Client, u string) []byte {
	b.Helper()
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("GET %s: %d %v %s", u, resp.StatusCode, err, body)
	}
	return body
}

func proxyArchiveURL(b *testing.B, versionJSON []byte) string {
	s := string(versionJSON)
	i := strings.Index(s, `"url":"`)
	if i < 0 {
		b.Fatalf("no url in %s", s)
	}
	s = s[i+7:]
	return s[:strings.Index(s, `"`)]
}

// proxyStartNginx serves body at path over TLS with the test certificate.
func proxyStartNginx(b *testing.B, ca *testenv.CA, path string, body []byte) (string, func()) {
	b.Helper()
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx"} {
			if _, err := os.Stat(p); err == nil {
				nginx = p
			}
		}
	}
	if nginx == "" {
		b.Skip("nginx is not installed (apt-get install nginx; bench/proxy.sh does)")
	}
	dir, err := os.MkdirTemp("", "oci-tofu-nginx-")
	if err != nil {
		b.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755)
	if err := os.WriteFile(filepath.Join(root, path), body, 0o644); err != nil {
		b.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	port := testenv.FreePort(b)
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	conf := fmt.Sprintf(`%s
worker_processes auto;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[2]s/tmp;
  proxy_temp_path %[2]s/tmp;
  fastcgi_temp_path %[2]s/tmp;
  uwsgi_temp_path %[2]s/tmp;
  scgi_temp_path %[2]s/tmp;
  types { application/json json; }
  default_type application/octet-stream;
  sendfile on;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:%[3]d ssl;
    ssl_certificate %[4]s;
    ssl_certificate_key %[5]s;
    root %[6]s;
  }
}
`, user, dir, port, ca.ServerCertFile, ca.ServerKeyFile, root)
	cf := filepath.Join(dir, "nginx.conf")
	os.WriteFile(cf, []byte(conf), 0o644)
	cmd := exec.Command(nginx, "-c", cf, "-g", "daemon off;")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	u := fmt.Sprintf("https://localhost:%d", port)
	c := proxyClient(ca)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := c.Get(u + path); err == nil {
			resp.Body.Close()
			break
		}
	}
	return u, func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		os.RemoveAll(dir)
	}
}

// proxyLoad sends GETs from workers keep-alive connections for d and
// returns requests per second.
func proxyLoad(b *testing.B, c *http.Client, u string, workers int, d time.Duration) float64 {
	var n, fails atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				resp, err := c.Get(u)
				if err != nil {
					fails.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					fails.Add(1)
					continue
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if fails.Load() > 0 {
		b.Fatalf("%s: %d failed requests", u, fails.Load())
	}
	return float64(n.Load()) / d.Seconds()
}

// proxyStream downloads u and returns MiB/s.
func proxyStream(b *testing.B, c *http.Client, u string, size int64) float64 {
	start := time.Now()
	resp, err := c.Get(u)
	if err != nil {
		b.Error(err)
		return 0
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || n != size || resp.StatusCode != 200 {
		b.Errorf("GET %s: %d, %d bytes, %v", u, resp.StatusCode, n, err)
		return 0
	}
	return float64(size) / (1 << 20) / time.Since(start).Seconds()
}

// proxyPeakRSS reads a process's peak resident set (VmHWM) in MiB.
func proxyPeakRSS(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Logf("no /proc: %v", err)
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
