package e2e

import (
	"archive/zip"
	"bufio"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// 4. Signals: SIGINT or SIGTERM in the middle of a push — while it hashes
// or uploads a large zip — ends the process within a second, with no tag
// written, to a registry and to an OCI layout alike.
func TestPushStopsOnSignal(t *testing.T) {
	reg := testenv.StartRegistry(t)
	dir := t.TempDir()
	zipPath := filepath.Join(dir, "terraform-provider-hello_1.0.0_linux_amd64.zip")
	writeLargeZip(t, zipPath, 256<<20)
	for _, target := range []string{"registry", "oci-layout"} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(target+"/"+sig.String(), func(t *testing.T) {
				repo, layout := reg.Host+"/signals/"+strings.ToLower(strings.ReplaceAll(sig.String(), " ", "-")), ""
				if target == "oci-layout" {
					layout = t.TempDir()
					repo = "oci-layout:" + layout
				}
				cmd := exec.Command(ociTofu, "push", "provider", "--quiet", "--unsigned", dir, repo)
				cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+reg.CA.CertFile, "DOCKER_CONFIG="+t.TempDir())
				logs := &testenv.LockedBuffer{}
				cmd.Stdout, cmd.Stderr = logs, logs
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				// Mid-push: the zip has been open for a while.
				if !waitOpen(cmd.Process.Pid, zipPath, done, 20*time.Second) {
					t.Fatalf("the push never opened the zip:\n%s", logs)
				}
				time.Sleep(500 * time.Millisecond)
				sent := time.Now()
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatalf("the push ended before the signal (make the zip bigger): %v\n%s", err, logs)
				}
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					cmd.Process.Kill()
					<-done
					t.Fatalf("the push did not stop within 10s of %s:\n%s", sig, logs)
				}
				took := time.Since(sent)
				t.Logf("%s: exited %v after %s: %s", sig, err, took.Round(time.Millisecond), strings.TrimSpace(logs.String()))
				if err == nil {
					t.Fatalf("the push finished before the signal reached it (make the zip bigger)")
				}
				if took > time.Second {
					t.Errorf("exited %s after %s, want within a second", took.Round(time.Millisecond), sig)
				}
				if layout != "" {
					if tags := layoutTags(t, layout); len(tags) > 0 {
						t.Errorf("tags %v written to the layout", tags)
					}
				} else {
					assertNoTags(t, reg, repo)
				}
			})
		}
	}
}

// writeLargeZip writes a provider zip holding one incompressible file of
// n bytes, streamed (it never sits in memory).
func writeLargeZip(t *testing.T, p string, n int) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	zw := zip.NewWriter(bw)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "terraform-provider-hello", Method: zip.Store})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.NewChaCha8([32]byte{1})
	buf := make([]byte, 1<<20)
	for written := 0; written < n; written += len(buf) {
		rng.Read(buf)
		if _, err := w.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
}

// waitOpen waits until process pid has file p open (from /proc), or it
// exits, or d passes.
func waitOpen(pid int, p string, done <-chan error, d time.Duration) bool {
	deadline := time.Now().Add(d)
	fds := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir(fds)
		for _, e := range entries {
			if target, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && target == p {
				return true
			}
		}
		select {
		case <-done:
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false
}
