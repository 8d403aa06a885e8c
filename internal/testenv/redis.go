package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Redis is a Debian redis-server on 127.0.0.1 and a free port, without
// persistence (--save "" --appendonly no), with a password; Stop and
// Start take it down and bring it back on the same port.
type Redis struct {
	Addr     string // 127.0.0.1:PORT
	Password string
	dir      string
	mu       sync.Mutex
	cmd      *exec.Cmd
}

// StartRedis starts redis-server until the test ends (the test fails
// when redis-server is not installed: `make tools-apt` installs it).
func StartRedis(t testing.TB) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server is not installed (apt-get install redis-server; make tools-apt does)")
	}
	r := &Redis{Addr: fmt.Sprintf("127.0.0.1:%d", FreePort(t)), Password: "test-redis-secret-p4ss", dir: t.TempDir()}
	r.Start(t)
	t.Cleanup(r.Stop)
	return r
}

// URL is the redis:// URL of the server, with its password.
func (r *Redis) URL() string { return "redis://:" + r.Password + "@" + r.Addr + "/0" }

// Start starts the server (again) and waits until it answers.
func (r *Redis) Start(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return
	}
	_, port, _ := net.SplitHostPort(r.Addr)
	cmd := exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no",
		"--requirepass", r.Password, "--dir", r.dir, "--logfile", filepath.Join(r.dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.cmd = cmd
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", r.Addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(r.dir, "redis.log"))
			t.Fatalf("redis-server did not start on %s: %s", r.Addr, log)
		}
	}
}

// Stop kills the server (its data is lost: nothing is persisted).
func (r *Redis) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}
