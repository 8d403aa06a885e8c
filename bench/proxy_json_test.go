package bench

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/servercreds"
)

// BenchmarkProxyJSON is BenchmarkProxy's warm <version>.json alone, in
// more rounds and beside a third server: a bare Go HTTPS server (this
// test binary run again, bareServerEnv) writing the same bytes from
// memory with the proxy's TLS configuration and http.Server settings,
// the floor of Go's HTTP/1.1 and TLS stack. Besides requests per second
// it reports each server's CPU time per answer (from /proc, nginx's
// workers included), which the other processes sharing the machine
// disturb far less than the wall clock. The sides take turns in rotating
// order; each figure is the median of its rounds (OCI_TOFU_BENCH_ROUNDS,
// default 6, of 2 s each).
//
// A fourth side, "scoped", is the same binary with a policy file naming
// one client, asked with that client's token: what a scope costs (its
// goal: at least 0.95 of the proxy's requests per second).
//
// OCI_TOFU_BENCH_BASELINE, an oci-tofu binary built from another commit,
// adds it as a fourth side ("baseline"), so a change is measured against
// what it changes in the same run.
func BenchmarkProxyJSON(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("wrk is not installed (apt-get install wrk; bench/proxy.sh does)")
	}
	reg := testenv.StartRegistry(b)
	ca := reg.CA
	proxyPushBigProvider(b, reg, "bench/acme/big", 1<<10)
	client := proxyClient(ca)
	versionPath := "/v1/mirror/example.com/acme/big/1.0.0.json"
	bin := buildOCITofu(b)
	proxy := startJSONProxy(b, bin, reg)
	quiet := startJSONProxy(b, bin, reg, "--log-level", "error")
	quiet.name = "quiet"
	body := proxyGet(b, client, proxy.url+versionPath)
	nginxURL, nginxPid := proxyStartNginx(b, ca, versionPath, body)
	bareURL, bare := startBareServer(b, ca, body)
	proxyWaitHealthy(b, client, bareURL)
	sides := []*jsonSide{proxy, quiet,
		{name: "nginx", url: nginxURL, cpu: func() time.Duration { return procTreeCPU(b, nginxPid) }},
		{name: "bare-go", url: bareURL, cpu: func() time.Duration { return procCPU(b, bare.Process.Pid) }},
		startScopedProxy(b, bin, reg)}
	if bin := os.Getenv("OCI_TOFU_BENCH_BASELINE"); bin != "" {
		base := startJSONProxy(b, bin, reg)
		base.name = "baseline"
		sides = append(sides, base)
	}
	urls := []string{}
	for _, s := range sides {
		urls = append(urls, s.url)
		if s.header != "" { // its archive URLs are signed
			proxyGetWith(b, client, s.url+versionPath, s.header)
			continue
		}
		// A proxy's URLs carry its own host.
		got := strings.ReplaceAll(string(proxyGet(b, client, s.url+versionPath)), s.url, proxy.url)
		if got != string(body) {
			b.Fatalf("%s serves %q", s.name, got)
		}
	}
	proxyCheckTLS(b, ca, urls...)
	rounds := 6
	if n, err := strconv.Atoi(os.Getenv("OCI_TOFU_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			for k := range sides {
				sides[(r+k)%len(sides)].measure(b, wrk, versionPath)
			}
		}
	}
	b.StopTimer()
	reportJSONSides(b, sides)
}

// jsonSide is one server under wrk load and what each round measured.
type jsonSide struct {
	name      string
	url       string
	header    string // sent with every request ("Authorization: Bearer …")
	cpu       func() time.Duration
	rps, usPA []float64
}

// measure runs one 2-second round of wrk against the side.
func (s *jsonSide) measure(b *testing.B, wrk, path string) {
	before := s.cpu()
	var headers []string
	if s.header != "" {
		headers = append(headers, s.header)
	}
	rps := proxyWrk(b, wrk, s.url+path, 32, 2*time.Second, headers...)
	cpu := s.cpu() - before
	s.rps = append(s.rps, rps)
	s.usPA = append(s.usPA, float64(cpu.Microseconds())/(rps*2))
}

func reportJSONSides(b *testing.B, sides []*jsonSide) {
	by := map[string]*jsonSide{}
	for _, s := range sides {
		b.Logf("%s: req/s %.0f, CPU µs per answer %.1f", s.name, s.rps, s.usPA)
		b.ReportMetric(median(s.rps), s.name+"-req/s")
		b.ReportMetric(median(s.usPA), s.name+"-cpu-µs/answer")
		by[s.name] = s
	}
	ratio := func(a, c string) {
		if by[a] != nil && by[c] != nil {
			b.ReportMetric(median(by[a].rps)/median(by[c].rps), "json-"+a+"/"+c)
			b.ReportMetric(median(by[a].usPA)/median(by[c].usPA), "cpu-"+a+"/"+c)
		}
	}
	ratio("proxy", "nginx")
	ratio("quiet", "nginx")
	ratio("proxy", "quiet")
	ratio("bare-go", "nginx")
	ratio("proxy", "bare-go")
	ratio("baseline", "nginx")
	ratio("proxy", "baseline")
	ratio("scoped", "proxy")
	b.ReportMetric(0, "ns/op")
}

// startScopedProxy starts `bin serve` as startJSONProxy does, with a
// policy file naming one client that reads the benchmark's provider; the
// side asks with its token.
func startScopedProxy(b *testing.B, bin string, reg *testenv.Registry) *jsonSide {
	b.Helper()
	const token = "bench-client-token-0123456789"
	file := filepath.Join(b.TempDir(), "policy.hcl")
	src := fmt.Sprintf("client \"bench\" {\n  tokens    = [%q]\n  providers = [\"example.com/acme/*\"]\n}\n", policy.TokenHash(token))
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		b.Fatal(err)
	}
	s := startJSONProxy(b, bin, reg, "--policy", file)
	s.name, s.header = "scoped", "Authorization: Bearer "+token
	return s
}

// startJSONProxy starts `bin serve` over TLS for the benchmark's provider,
// at serve's defaults (its log line per request at --log-level info,
// written to a pipe the benchmark drains, as a container runtime does),
// with extra flags.
func startJSONProxy(b *testing.B, bin string, reg *testenv.Registry, flags ...string) *jsonSide {
	b.Helper()
	port := testenv.FreePort(b)
	args := append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls-cert", reg.CA.ServerCertFile, "--tls-key", reg.CA.ServerKeyFile,
		"--provider-template", reg.Host + "/bench/${namespace}/${type}"}, flags...)
	cmd := exec.Command(bin, args...)
	drainStderr(b, cmd)
	startBenchProcess(b, cmd, "SSL_CERT_FILE="+reg.CA.CertFile, "DOCKER_CONFIG="+b.TempDir())
	s := &jsonSide{name: "proxy", url: fmt.Sprintf("https://localhost:%d", port), cpu: func() time.Duration { return procCPU(b, cmd.Process.Pid) }}
	proxyWaitHealthy(b, proxyClient(reg.CA), s.url)
	return s
}

// drainStderr makes cmd's standard error a pipe read to its end and
// dropped, as a container runtime reads a process's log.
func drainStderr(b *testing.B, cmd *exec.Cmd) {
	b.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = w
	go func() { io.Copy(io.Discard, r); r.Close() }()
	b.Cleanup(func() { w.Close() })
}

// startBenchProcess starts cmd with extra environment, stopped at the
// end of the benchmark.
func startBenchProcess(b *testing.B, cmd *exec.Cmd, env ...string) *exec.Cmd {
	b.Helper()
	cmd.Env = append(os.Environ(), env...)
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// bareServerEnv, set in this test binary's environment, makes it the bare
// Go server of BenchmarkProxyJSON instead of running benchmarks (TestMain).
const bareServerEnv = "OCI_TOFU_BENCH_BARE_SERVER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(bareServerEnv); spec != "" {
		if err := runBareServer(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// startBareServer runs this test binary as a bare Go HTTPS server
// answering body on every path (and ok on /healthz).
func startBareServer(b *testing.B, ca *testenv.CA, body []byte) (string, *exec.Cmd) {
	b.Helper()
	f := filepath.Join(b.TempDir(), "body.json")
	if err := os.WriteFile(f, body, 0o644); err != nil {
		b.Fatal(err)
	}
	port := testenv.FreePort(b)
	spec := strings.Join([]string{fmt.Sprintf("127.0.0.1:%d", port), ca.ServerCertFile, ca.ServerKeyFile, f}, "\n")
	cmd := startBenchProcess(b, exec.Command(os.Args[0]), bareServerEnv+"="+spec)
	return fmt.Sprintf("https://localhost:%d", port), cmd
}

// runBareServer serves as `oci-tofu serve` does (servercreds'
// configuration, a TLS listener, the same http.Server settings), with a
// handler that writes the document and the proxy's three headers.
func runBareServer(spec string) error {
	p := strings.Split(spec, "\n")
	cert, err := servercreds.LoadCertificate(p[1], p[2])
	if err != nil {
		return err
	}
	body, err := os.ReadFile(p[3])
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", p[0])
	if err != nil {
		return err
	}
	length := []string{strconv.Itoa(len(body))}
	hs := &http.Server{
		ErrorLog:          log.New(io.Discard, "", 0),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" {
				w.Write([]byte("ok\n"))
				return
			}
			h := w.Header()
			h["Content-Type"] = []string{"application/json"}
			h["Content-Length"] = length
			h["Cache-Control"] = []string{"no-store"}
			w.Write(body)
		}),
	}
	return hs.Serve(tls.NewListener(ln, servercreds.ServerConfig(cert)))
}

// procTreeCPU is procCPU of pid and of its children (nginx's workers).
func procTreeCPU(b *testing.B, pid int) time.Duration {
	total := procCPU(b, pid)
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		b.Fatalf("no /proc children: %v", err)
	}
	for _, c := range strings.Fields(string(children)) {
		if n, err := strconv.Atoi(c); err == nil {
			total += procCPU(b, n)
		}
	}
	return total
}
