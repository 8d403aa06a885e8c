package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// secretVolume writes files the way the kubelet updates a Secret volume
// (and so what cert-manager's rotations look like to the pod): the files
// live in a new timestamped directory, "..data" is a symbolic link to it,
// swapped by rename, and each file name is a link through "..data".
type secretVolume struct {
	dir string
	n   int
}

func (v *secretVolume) write(t *testing.T, files map[string][]byte) {
	t.Helper()
	v.n++
	gen := fmt.Sprintf("..2026_11_25_%02d", v.n)
	if err := os.Mkdir(filepath.Join(v.dir, gen), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(v.dir, gen, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(v.dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(gen, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// leafSerial is the serial number of the certificate a new connection
// to the proxy is shown.
func leafSerial(t *testing.T, ca *testenv.CA, host string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", host, &tls.Config{RootCAs: ca.Pool, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("a new connection: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// loadLoop sends requests from several clients until stopped: half keep
// their connection, half open a new one per request. It records failures,
// the serials of the certificates seen on new and on reused connections,
// and every reused connection that showed another certificate than when
// it was made. A kept connection may still be closed and made again (an
// idle timeout on a loaded machine), so what rotation must not do is
// judged per connection: late counts the requests, once late is set,
// reused on connections made under the first certificate.
type loadLoop struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	errs       []string
	seen       map[bool]map[string]bool // reused? → serials
	made       map[net.Conn]string      // connection → the serial it was made with
	changed    []string
	late       atomic.Bool
	keptLate   atomic.Int64
	stop       chan struct{}
	wg         sync.WaitGroup
}

func startLoad(ca *testenv.CA, url string, clients int) *loadLoop {
	l := &loadLoop{stop: make(chan struct{}), seen: map[bool]map[string]bool{true: {}, false: {}}, made: map[net.Conn]string{}}
	for i := range clients {
		keepAlive := i%2 == 0
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, DisableKeepAlives: !keepAlive}}
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				l.once(client, url, keepAlive)
			}
		})
	}
	return l
}

func (l *loadLoop) once(client *http.Client, url string, keepAlive bool) {
	var conn httptrace.GotConnInfo
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conn = i }})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		panic(err)
	}
	resp, err := client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed.Add(1)
		l.errs = append(l.errs, err.Error())
		return
	}
	l.ok.Add(1)
	serial := resp.TLS.PeerCertificates[0].SerialNumber.String()
	l.seen[conn.Reused][serial] = true
	if !conn.Reused {
		l.made[conn.Conn] = serial
		return
	}
	if made := l.made[conn.Conn]; made != serial {
		l.changed = append(l.changed, fmt.Sprintf("a connection made with serial %s showed %s", made, serial))
	} else if made == "1001" && l.late.Load() {
		l.keptLate.Add(1)
	}
}

func (l *loadLoop) halt() { close(l.stop); l.wg.Wait() }

// waitUntil polls cond every 20ms until it holds; the test fails after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("waited %s for %s", d, what)
}

// Certificate rotation under load: while clients request a provider
// index without pause, the Secret volume holding the certificate is
// rotated (kubelet-style link swap), then given a broken pair, then
// rotated again. No request fails, new connections get each new
// certificate, connections open before a rotation keep theirs, and the
// broken pair is refused (logged, counted) while the previous one is
// served.
func TestCertificateRotationUnderLoad(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
	ca := testenv.NewCA(t)
	vol := &secretVolume{dir: t.TempDir()}
	cert1, key1 := ca.IssueServer(t, 1001, "oci-tofu rotation 1")
	vol.write(t, map[string][]byte{"tls.crt": cert1, "tls.key": key1})

	port := testenv.FreePort(t)
	cmd := exec.Command(ociTofu, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls-cert", filepath.Join(vol.dir, "tls.crt"), "--tls-key", filepath.Join(vol.dir, "tls.key"),
		"--provider-template", reg.Host+"/providers/${namespace}/${type}", "--shutdown-timeout", "10s")
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+ca.CertFile, "DOCKER_CONFIG="+t.TempDir())
	s := launchServe(t, cmd, port)
	if got := leafSerial(t, ca, s.Host); got != "1001" {
		t.Fatalf("serving serial %s, want 1001", got)
	}

	load := startLoad(ca, s.URL+"/v1/mirror/example.com/test/hello/index.json", 6)
	defer load.halt()
	waitUntil(t, 30*time.Second, "requests under the first certificate", func() bool { return load.ok.Load() >= 50 })

	cert2, key2 := ca.IssueServer(t, 1002, "oci-tofu rotation 2")
	vol.write(t, map[string][]byte{"tls.crt": cert2, "tls.key": key2})
	waitUntil(t, 30*time.Second, "new connections to get serial 1002", func() bool { return leafSerial(t, ca, s.Host) == "1002" })

	cert3, _ := ca.IssueServer(t, 1003, "oci-tofu broken pair")
	vol.write(t, map[string][]byte{"tls.crt": cert3, "tls.key": key2}) // the key does not match
	waitUntil(t, 30*time.Second, "the broken pair to be refused", func() bool {
		return strings.Contains(metricsText(t, s), `oci_tofu_proxy_tls_certificate_reloads_total{result="failed"} 1`)
	})
	if got := leafSerial(t, ca, s.Host); got != "1002" {
		t.Errorf("after a broken pair, new connections get serial %s, want the previous 1002", got)
	}

	cert4, key4 := ca.IssueServer(t, 1004, "oci-tofu rotation 4")
	vol.write(t, map[string][]byte{"tls.crt": cert4, "tls.key": key4})
	waitUntil(t, 30*time.Second, "new connections to get serial 1004", func() bool { return leafSerial(t, ca, s.Host) == "1004" })
	load.late.Store(true)
	before := load.ok.Load()
	waitUntil(t, 30*time.Second, "requests under the last certificate", func() bool { return load.ok.Load() >= before+50 })
	load.halt()
	load.stop = make(chan struct{}) // the deferred halt finds nothing left to stop

	if n := load.failed.Load(); n != 0 {
		t.Errorf("%d of %d requests failed during rotation: %v", n, n+load.ok.Load(), load.errs[:min(len(load.errs), 5)])
	}
	t.Logf("%d requests, serials seen: new connections %v, reused connections %v; %d requests late on first connections", load.ok.Load(), load.seen[false], load.seen[true], load.keptLate.Load())
	for _, serial := range []string{"1001", "1002", "1004"} {
		if !load.seen[false][serial] {
			t.Errorf("no new connection under load was shown serial %s", serial)
		}
	}
	if load.seen[false]["1003"] || load.seen[true]["1003"] {
		t.Errorf("the certificate of the broken pair was served")
	}
	if len(load.changed) > 0 {
		t.Errorf("reused connections changed certificate: %v", load.changed[:min(len(load.changed), 5)])
	}
	if load.keptLate.Load() == 0 {
		t.Errorf("no connection made under the first certificate was still used after the last rotation (reused connections saw %v): rotation must not drop connections", load.seen[true])
	}
	m := metricsText(t, s)
	if !strings.Contains(m, `oci_tofu_proxy_tls_certificate_reloads_total{result="reloaded"} 2`) {
		t.Errorf("reload metrics:\n%s", grepLines(m, "tls_certificate_reloads"))
	}
	if logs := s.logs.String(); !strings.Contains(logs, "do not load: serving the previous certificate") || !strings.Contains(logs, "TLS certificate reloaded") {
		t.Errorf("the reloads are not logged:\n%s", logs)
	}
}

func metricsText(t *testing.T, s *served) string {
	t.Helper()
	code, body := s.get(t, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	return string(body)
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// On SIGTERM the proxy first turns /readyz to 503 "draining" and keeps
// answering requests (new connections too) for --shutdown-delay, then
// closes its listener, lets requests finish and exits 0.
func TestDrainOnSIGTERM(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
	s := startServeEnv(t, []string{"OCI_TOFU_SHUTDOWN_DELAY=10s"}, "--provider-template", reg.Host+"/providers/${namespace}/${type}")
	waitUntil(t, 30*time.Second, "/readyz to answer 200", func() bool { code, _ := s.get(t, "/readyz"); return code == 200 })
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "/readyz to answer 503 draining", func() bool {
		code, body := s.get(t, "/readyz")
		return code == 503 && strings.Contains(string(body), "draining")
	})
	fresh := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: testenv.NewCA(t).Pool}, DisableKeepAlives: true}}
	for _, path := range []string{"/v1/mirror/example.com/test/hello/index.json", "/livez"} {
		resp, err := fresh.Get(s.URL + path)
		if err != nil {
			t.Fatalf("a new connection while draining: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s while draining: %d", path, resp.StatusCode)
		}
	}
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the proxy did not exit after its shutdown delay")
	}
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d", code)
	}
	logs := s.logs.String()
	d, sh := strings.Index(logs, "draining: not ready"), strings.Index(logs, `msg="shutting down"`) // not the readiness reason, which may be logged first
	if d < 0 || sh < d {
		t.Errorf("want the drain logged before the shutdown:\n%s", logs)
	}
}
