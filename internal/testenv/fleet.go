package testenv

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Fleet is several `oci-tofu serve` processes (the built binary) behind
// Debian's nginx, which spreads requests over them round-robin over TLS
// (the test CA's certificate at both hops) and passes the client's Host
// on, so every URL the replicas hand out leads back through nginx.
type Fleet struct {
	URL      string // https://localhost:PORT, nginx
	Host     string // localhost:PORT
	Replicas []*Replica
	Client   *http.Client
}

// Replica is one serve process of a fleet.
type Replica struct {
	URL  string // https://localhost:PORT, the replica itself
	Logs *LockedBuffer
	cmd  *exec.Cmd
	done chan struct{}
}

// StartFleet starts n replicas of bin ("serve" and args given after the
// listen and TLS flags; env added to this process's) and nginx in front,
// all stopped when the test ends.
func StartFleet(t testing.TB, bin string, n int, env []string, args ...string) *Fleet {
	t.Helper()
	return StartFleetEach(t, bin, n, env, func(int) []string { return args })
}

// StartFleetEach is StartFleet with each replica's own flags: argsOf(i)
// are replica i's (e.g. a distinct --public-url, which names the replica
// in what it sends).
func StartFleetEach(t testing.TB, bin string, n int, env []string, argsOf func(i int) []string) *Fleet {
	t.Helper()
	ca := NewCA(t)
	f := &Fleet{Client: ca.HTTPClient()}
	var upstreams []string
	for i := range n {
		r := startReplica(t, bin, ca, env, argsOf(i))
		f.Replicas = append(f.Replicas, r)
		upstreams = append(upstreams, strings.TrimPrefix(r.URL, "https://localhost"))
	}
	f.Host = startFleetNginx(t, ca, upstreams)
	f.URL = "https://" + f.Host
	waitHealthy(t, f.Client, f.URL, nil)
	return f
}

func startReplica(t testing.TB, bin string, ca *CA, env, args []string) *Replica {
	t.Helper()
	port := FreePort(t)
	all := append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls-cert", ca.ServerCertFile, "--tls-key", ca.ServerKeyFile, "--shutdown-timeout", "10s"}, args...)
	r := &Replica{URL: fmt.Sprintf("https://localhost:%d", port)}
	r.cmd = exec.Command(bin, all...)
	r.cmd.Env = append(append(os.Environ(), "SSL_CERT_FILE="+ca.CertFile, "DOCKER_CONFIG="+t.TempDir()), env...)
	r.Logs, r.done = startLogged(t, r.cmd)
	t.Cleanup(func() {
		stopGracefully(r.cmd, r.done, syscall.SIGTERM, 15*time.Second)
		if t.Failed() {
			t.Logf("replica %s log:\n%s", r.URL, r.Logs.String())
		}
	})
	waitHealthy(t, ca.HTTPClient(), r.URL, r)
	return r
}

// Kill ends the replica with SIGKILL: nothing of it runs on, nothing is
// cleaned up.
func (r *Replica) Kill() {
	r.cmd.Process.Kill()
	<-r.done
}

// Exited reports whether the replica has ended.
func (r *Replica) Exited() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func waitHealthy(t testing.TB, c *http.Client, base string, r *Replica) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r != nil && r.Exited() {
			t.Fatalf("oci-tofu serve exited:\n%s", r.Logs.String())
		}
		resp, err := c.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
	}
	t.Fatalf("%s did not become healthy", base)
}

// startFleetNginx runs nginx on a free port in front of the upstream
// ports (":PORT" on localhost) and returns localhost:PORT.
func startFleetNginx(t testing.TB, ca *CA, upstreams []string) string {
	t.Helper()
	var servers strings.Builder
	for _, u := range upstreams {
		fmt.Fprintf(&servers, "    server 127.0.0.1%s max_fails=1 fail_timeout=5s;\n", u)
	}
	host, _ := StartNginx(t, ca, NginxConfig{
		Workers:     "1",
		Connections: 4096,
		HTTP: `  upstream replicas {
` + servers.String() + `    keepalive 64;
  }`,
		Server: fmt.Sprintf(`    location / {
      proxy_pass https://replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_ssl_server_name on;
      proxy_ssl_name localhost;
      proxy_ssl_verify on;
      proxy_ssl_trusted_certificate %s;
      proxy_ssl_session_reuse on;
      proxy_buffering off;
      proxy_read_timeout 300s;
      proxy_next_upstream error timeout;
    }`, ca.CertFile),
	})
	return host
}
