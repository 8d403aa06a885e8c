package bench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// BenchmarkProxy measures `oci-tofu serve` beside its references, over TLS
// on loopback, in one run (the goals in brackets):
//
//   - warm <version>.json requests/s through the proxy vs nginx serving the
//     same JSON as a static file (json-proxy/nginx, goal ≥ 0.8);
//   - streaming a 256 MiB archive through the proxy vs straight from the
//     registry's blob endpoint: the CPU time each server process spends
//     per byte, read from /proc (stream-cpu-proxy/registry over HTTP/1.1,
//     stream-h2-cpu-proxy/registry over HTTP/2, which is what tofu and
//     terraform speak to a server offering it; goal ≤ 2.4), and the
//     wall-clock throughput (stream-proxy/registry, HTTP/1.1);
//   - the CPU time each JSON server spends per answer (nginx's workers
//     included), steadier than requests per second on a shared machine;
//   - the proxy's peak RSS during 8 concurrent 256 MiB downloads (goal
//     < 150 MiB: nothing is buffered).
//
// Both sides of each comparison get the same client, the same protocol
// (HTTP/1.1, or HTTP/2 for the stream-h2 figures; keep-alive connections
// opened before measuring) and the same TLS (1.3, TLS_AES_128_GCM_SHA256, X25519: nginx is configured to match
// what Go negotiates). The JSON load comes from wrk when installed (a C
// client leaves more of the 2 CPUs to the servers; wrk speaks HTTP/1.1
// only, so the proxy's HTTP/2 plays no part), else from Go workers. The
// machine is small and noisy, so the sides alternate in several rounds
// (ABBA) and each figure is the median of its rounds.
func BenchmarkProxy(b *testing.B) {
	const archiveSize = 256 << 20
	reg := testenv.StartRegistry(b)
	ca := reg.CA
	bin := buildOCITofu(b)
	zipDigest := proxyPushBigProvider(b, reg, "bench/acme/big", archiveSize)

	port := testenv.FreePort(b)
	proxyURL := fmt.Sprintf("https://localhost:%d", port)
	cmd := exec.Command(bin, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls-cert", ca.ServerCertFile, "--tls-key", ca.ServerKeyFile,
		"--provider-template", reg.Host+"/bench/${namespace}/${type}") // serve's defaults, as users run it
	drainStderr(b, cmd)
	startBenchProcess(b, cmd, "SSL_CERT_FILE="+ca.CertFile, "DOCKER_CONFIG="+b.TempDir())
	client := proxyClient(ca)
	proxyWaitHealthy(b, client, proxyURL)

	versionPath := "/v1/mirror/example.com/acme/big/1.0.0.json"
	body := proxyGet(b, client, proxyURL+versionPath)
	nginxURL, nginxPid := proxyStartNginx(b, ca, versionPath, body)
	if got := proxyGet(b, client, nginxURL+versionPath); string(got) != string(body) {
		b.Fatalf("nginx serves %q", got)
	}
	proxyCheckTLS(b, ca, proxyURL, nginxURL)
	archiveURL := proxyResolve(b, proxyURL+versionPath, proxyArchiveURL(b, body))
	blobURL := fmt.Sprintf("https://%s/v2/bench/acme/big/blobs/%s", reg.Host, zipDigest)
	h2 := proxyH2Client(ca)
	proxyCheckProto(b, h2, "HTTP/2.0", archiveURL, blobURL)
	proxyCheckProto(b, client, "HTTP/1.1", archiveURL, blobURL)

	load := proxyLoad
	jsonClient := "go"
	if wrk, err := exec.LookPath("wrk"); err == nil {
		load = func(b *testing.B, _ *http.Client, u string, workers int, d time.Duration) float64 {
			return proxyWrk(b, wrk, u, workers, d)
		}
		jsonClient = "wrk"
	}
	b.Logf("JSON load from %s, 32 connections", jsonClient)

	b.ResetTimer()
	var jsonProxy, jsonNginx, streamProxy, streamReg, cpuProxy, cpuReg []float64
	// jsonCPU is each JSON server's CPU time per answer, summed over the
	// rounds: the steadier measure on a shared machine.
	var jsonCPU [2]struct {
		cpu     time.Duration
		answers float64
	}
	jsonLoad := func(side int, u string, rps *[]float64) {
		cpu := func() time.Duration {
			if side == 0 {
				return procCPU(b, cmd.Process.Pid)
			}
			return procTreeCPU(b, nginxPid)
		}
		before := cpu()
		v := load(b, client, u+versionPath, 32, 2*time.Second)
		jsonCPU[side].cpu += cpu() - before
		jsonCPU[side].answers += v * 2
		*rps = append(*rps, v)
	}
	var h2SpeedProxy, h2SpeedReg, h2Proxy, h2Reg []float64
	// stream downloads u with c, adding its MiB/s to speed and the CPU
	// seconds process pid spent meanwhile to cpu.
	streamWith := func(c *http.Client, u string, pid int, speed, cpu *[]float64) {
		before := procCPU(b, pid)
		*speed = append(*speed, proxyStream(b, c, u, archiveSize))
		*cpu = append(*cpu, (procCPU(b, pid) - before).Seconds())
	}
	stream := func(u string, pid int, speed, cpu *[]float64) { streamWith(client, u, pid, speed, cpu) }
	for i := 0; i < b.N; i++ {
		// ABBA rounds, so drift and noise hit both sides alike.
		for r := 0; r < 4; r++ {
			if r%2 == 0 {
				jsonLoad(0, proxyURL, &jsonProxy)
				jsonLoad(1, nginxURL, &jsonNginx)
			} else {
				jsonLoad(1, nginxURL, &jsonNginx)
				jsonLoad(0, proxyURL, &jsonProxy)
			}
		}
		for r := 0; r < 5; r++ {
			if r%2 == 0 {
				stream(blobURL, reg.Pid(), &streamReg, &cpuReg)
				stream(archiveURL, cmd.Process.Pid, &streamProxy, &cpuProxy)
			} else {
				stream(archiveURL, cmd.Process.Pid, &streamProxy, &cpuProxy)
				stream(blobURL, reg.Pid(), &streamReg, &cpuReg)
			}
		}
		// The same over HTTP/2, what tofu and terraform speak.
		h2ProxySide := func() { streamWith(h2, archiveURL, cmd.Process.Pid, &h2SpeedProxy, &h2Proxy) }
		h2RegSide := func() { streamWith(h2, blobURL, reg.Pid(), &h2SpeedReg, &h2Reg) }
		for r := 0; r < 5; r++ {
			if r%2 == 0 {
				h2RegSide()
				h2ProxySide()
			} else {
				h2ProxySide()
				h2RegSide()
			}
		}
	}
	b.Logf("json req/s: proxy %.0f, nginx %.0f", jsonProxy, jsonNginx)
	b.Logf("stream MiB/s: proxy %.0f, registry %.0f", streamProxy, streamReg)
	b.Logf("stream CPU s per 256 MiB: proxy %.2f, registry %.2f", cpuProxy, cpuReg)
	b.Logf("HTTP/2 stream MiB/s: proxy %.0f, registry %.0f", h2SpeedProxy, h2SpeedReg)
	b.Logf("HTTP/2 stream CPU s per 256 MiB: proxy %.2f, registry %.2f", h2Proxy, h2Reg)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); proxyStream(b, proxyClient(ca), archiveURL, archiveSize) }()
	}
	wg.Wait()
	b.StopTimer()
	rss := float64(testenv.ProcStatus(b, cmd.Process.Pid)["VmHWM"]) / 1024
	jp, jn, sp, sr := median(jsonProxy), median(jsonNginx), median(streamProxy), median(streamReg)
	b.ReportMetric(jp, "json-proxy-req/s")
	b.ReportMetric(jn, "json-nginx-req/s")
	b.ReportMetric(jp/jn, "json-proxy/nginx")
	cpuPA := func(side int) float64 { return float64(jsonCPU[side].cpu.Microseconds()) / jsonCPU[side].answers }
	b.ReportMetric(cpuPA(0), "json-cpu-proxy-µs/answer")
	b.ReportMetric(cpuPA(1), "json-cpu-nginx-µs/answer")
	b.ReportMetric(cpuPA(0)/cpuPA(1), "json-cpu-proxy/nginx")
	b.ReportMetric(sp, "stream-proxy-MiB/s")
	b.ReportMetric(sr, "stream-registry-MiB/s")
	b.ReportMetric(sp/sr, "stream-proxy/registry")
	cp, cr := median(cpuProxy), median(cpuReg)
	b.ReportMetric(cp*1000, "stream-cpu-proxy-ms")
	b.ReportMetric(cr*1000, "stream-cpu-registry-ms")
	b.ReportMetric(cp/cr, "stream-cpu-proxy/registry")
	hp, hr := median(h2Proxy), median(h2Reg)
	b.ReportMetric(hp*1000, "stream-h2-cpu-proxy-ms")
	b.ReportMetric(hr*1000, "stream-h2-cpu-registry-ms")
	b.ReportMetric(hp/hr, "stream-h2-cpu-proxy/registry")
	b.ReportMetric(rss, "proxy-peak-RSS-MiB")
	b.ReportMetric(0, "ns/op")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// proxyH2Client is a client that speaks HTTP/2 where offered, as tofu
// and terraform do (their HTTP clients force the attempt).
func proxyH2Client(ca *testenv.CA) *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:    &tls.Config{RootCAs: ca.Pool, CurvePreferences: []tls.CurveID{tls.X25519}},
		ForceAttemptHTTP2:  true,
		DisableCompression: true,
	}}
}

// proxyCheckProto makes sure c speaks proto to each of urls.
func proxyCheckProto(b *testing.B, c *http.Client, proto string, urls ...string) {
	b.Helper()
	for _, u := range urls {
		resp, err := c.Head(u)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.Proto != proto || resp.StatusCode != http.StatusOK {
			b.Fatalf("HEAD %s: %d over %s, want 200 over %s", u, resp.StatusCode, resp.Proto, proto)
		}
	}
}

// proxyCheckTLS makes sure both JSON servers negotiate the same TLS
// version and cipher suite with a client that offers the common ones.
func proxyCheckTLS(b *testing.B, ca *testenv.CA, urls ...string) {
	b.Helper()
	var want string
	for _, u := range urls {
		host := strings.TrimPrefix(u, "https://")
		c, err := tls.Dial("tcp", host, proxyClient(ca).Transport.(*http.Transport).TLSClientConfig)
		if err != nil {
			b.Fatal(err)
		}
		st := c.ConnectionState()
		c.Close()
		got := tls.VersionName(st.Version) + " " + tls.CipherSuiteName(st.CipherSuite) + " " + st.CurveID.String() + " " + st.NegotiatedProtocol
		if want == "" {
			want = got
		} else if got != want {
			b.Fatalf("unfair comparison: %s negotiates %s, %s %s", u, got, urls[0], want)
		}
	}
	b.Logf("both servers: %s", want)
}

// proxyWrk runs wrk (HTTP/1.1 keep-alive, one thread) against u and
// returns requests per second; any failed request fails the benchmark.
func proxyWrk(b *testing.B, wrk, u string, conns int, d time.Duration, headers ...string) float64 {
	b.Helper()
	args := []string{"-t1", "-c" + strconv.Itoa(conns), "-d" + strconv.Itoa(int(d.Seconds())) + "s"}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	out, err := exec.Command(wrk, append(args, u)...).CombinedOutput()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	s := string(out)
	if strings.Contains(s, "Non-2xx") || strings.Contains(s, "Socket errors") {
		b.Fatalf("wrk %s: failed requests\n%s", u, s)
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Requests/sec:"); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	b.Fatalf("wrk: no Requests/sec in\n%s", s)
	return 0
}

// proxyPushBigProvider pushes one linux_amd64 package of n random bytes
// (the proxy never opens the zip, so its content need not be a zip).
func proxyPushBigProvider(b testing.TB, reg *testenv.Registry, repoName string, n int64) digest.Digest {
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
		Platform: names.Platform{OS: "linux", Arch: "amd64"},
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
	if _, err := oci.Push(context.Background(), repo, a, oci.Tags{"1.0.0": ""}, oci.PushOptions{}); err != nil {
		b.Fatal(err)
	}
	return h.Digest()
}

// proxyClient is one HTTP/1.1 keep-alive client for both servers under
// comparison, so protocol differences do not skew the ratio.
func proxyClient(ca *testenv.CA) *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: ca.Pool, NextProtos: []string{"http/1.1"}, CurvePreferences: []tls.CurveID{tls.X25519}},
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
	return proxyGetWith(b, c, u, "")
}

// proxyGetWith is proxyGet with a header ("Name: value"; none when empty).
func proxyGetWith(b *testing.B, c *http.Client, u, header string) []byte {
	b.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		b.Fatal(err)
	}
	if name, value, ok := strings.Cut(header, ": "); ok {
		req.Header.Set(name, value)
	}
	resp, err := c.Do(req)
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

// proxyResolve is ref (absolute, or relative as a plain-HTTP proxy
// without --public-url writes it) resolved against the document's URL.
func proxyResolve(b *testing.B, doc, ref string) string {
	base, err := url.Parse(doc)
	if err != nil {
		b.Fatal(err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		b.Fatal(err)
	}
	return base.ResolveReference(r).String()
}

// proxyStartNginx serves body at path over TLS with the test certificate
// until the benchmark ends; it returns the URL and the master process's
// pid (its workers are its children).
func proxyStartNginx(b *testing.B, ca *testenv.CA, path string, body []byte) (string, int) {
	b.Helper()
	if testenv.NginxPath() == "" {
		b.Skip("nginx is not installed (apt-get install nginx; bench/proxy.sh does)")
	}
	root := b.TempDir()
	os.Chmod(root, 0o755)
	os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755)
	if err := os.WriteFile(filepath.Join(root, path), body, 0o644); err != nil {
		b.Fatal(err)
	}
	host, pid := testenv.StartNginx(b, ca, testenv.NginxConfig{
		Workers:     "auto",
		Connections: 1024,
		HTTP: `  types { application/json json; }
  default_type application/octet-stream;
  sendfile on;`,
		// What Go's crypto/tls (the proxy's server) negotiates, for fairness:
		// nginx's defaults pick TLS 1.2 with AES-256.
		Server: `    ssl_protocols TLSv1.3;
    ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;
    ssl_ecdh_curve X25519;
    root ` + root + `;`,
	})
	u := "https://" + host
	c := proxyClient(ca)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := c.Get(u + path); err == nil {
			resp.Body.Close()
			break
		}
	}
	return u, pid
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

// procCPU is the CPU time (user and system, all threads) process pid has
// used, from /proc/PID/stat, in clock ticks of 10 ms.
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("no /proc: %v", err)
	}
	// The command name (field 2) may hold spaces: count from its ")".
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
