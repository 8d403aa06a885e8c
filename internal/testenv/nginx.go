package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// NginxConfig is what differs between the nginx processes tests and
// benchmarks start; StartNginx writes the rest (pid and log files, temp
// paths, the TLS listener on 127.0.0.1 with the test CA's server
// certificate, keep-alive).
type NginxConfig struct {
	Workers     string // worker_processes: "1", "auto"
	Connections int    // worker_connections
	HTTP        string // directives of the http block, before the server
	Server      string // directives of the server block, after the listener
}

// NginxPath is the installed nginx, or "" when there is none.
func NginxPath() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// StartNginx runs nginx with conf, listening over TLS on a free port of
// 127.0.0.1, until the test ends, and returns localhost:PORT and the
// master process's pid (the workers are its children). Its output and
// error log are logged when the test fails.
func StartNginx(t testing.TB, ca *CA, conf NginxConfig) (host string, pid int) {
	t.Helper()
	nginx := NginxPath()
	if nginx == "" {
		t.Fatal("nginx is not installed (apt-get install nginx; make tools-apt does)")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	port := FreePort(t)
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(nginxConf(dir, port, ca, conf)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-c", cf, "-g", "daemon off;")
	log, done := startLogged(t, cmd)
	t.Cleanup(func() {
		stopGracefully(cmd, done, syscall.SIGQUIT, 5*time.Second)
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx: %s\n%s", log.String(), b)
		}
	})
	return fmt.Sprintf("localhost:%d", port), cmd.Process.Pid
}

// nginxConf is the whole configuration: conf inside the frame every test
// nginx shares, its files in dir.
func nginxConf(dir string, port int, ca *CA, conf NginxConfig) string {
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;"
	}
	return fmt.Sprintf(`%[1]s
worker_processes %[3]s;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log;
events { worker_connections %[4]d; }
http {
  access_log off;
  client_body_temp_path %[2]s/tmp;
  proxy_temp_path %[2]s/tmp;
  fastcgi_temp_path %[2]s/tmp;
  uwsgi_temp_path %[2]s/tmp;
  scgi_temp_path %[2]s/tmp;
  keepalive_requests 100000;
%[5]s
  server {
    listen 127.0.0.1:%[6]d ssl;
    ssl_certificate %[7]s;
    ssl_certificate_key %[8]s;
%[9]s
  }
}
`, user, dir, conf.Workers, conf.Connections, conf.HTTP, port, ca.ServerCertFile, ca.ServerKeyFile, conf.Server)
}
