package e2e

import (
	"archive/zip"
	"bufio"
	"io/fs"
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

// 4. Signals: SIGTERM while a push hashes a large zip, SIGINT while it
// uploads it, end the process at once (within a second when the machine
// is idle), with no tag written, to a registry and to an OCI layout alike.
func TestPushStopsOnSignal(t *testing.T) {
	reg := testenv.StartRegistry(t)
	dir := t.TempDir()
	zipPath := filepath.Join(dir, "terraform-provider-hello_1.0.0_linux_amd64.zip")
	writeLargeZip(t, zipPath, 256<<20)
	for _, target := range []string{"registry", "oci-layout"} {
		for _, phase := range []struct {
			name string
			sig  syscall.Signal
		}{{"hashing", syscall.SIGTERM}, {"uploading", syscall.SIGINT}} {
			t.Run(target+"/"+phase.name, func(t *testing.T) {
				repo, layout, written := reg.Host+"/signals/"+phase.name+"/hello", "", reg.Storage
				if target == "oci-layout" {
					layout = t.TempDir()
					repo, written = "oci-layout:"+layout, layout
				}
				cmd := exec.Command(ociTofu, "push", "provider", "--quiet", "--unsigned", dir, repo)
				cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+reg.CA.CertFile, "DOCKER_CONFIG="+t.TempDir())
				logs := &testenv.LockedBuffer{}
				cmd.Stdout, cmd.Stderr = logs, logs
				before := bytesUnder(written)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				// Hashing: the zip is open and being read (a push reads it
				// three times before it uploads). Uploading: the target has
				// received some of it.
				reached := waitOpen(cmd.Process.Pid, zipPath, done, 20*time.Second)
				if reached && phase.name == "uploading" {
					reached = waitFor(func() bool { return bytesUnder(written) > before+8<<20 }, done, 20*time.Second)
				}
				if !reached {
					t.Fatalf("the push never reached %s:\n%s", phase.name, logs)
				}
				time.Sleep(50 * time.Millisecond)
				sent := time.Now()
				if err := cmd.Process.Signal(phase.sig); err != nil {
					t.Fatalf("the push ended before the signal: %v\n%s", err, logs)
				}
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					cmd.Process.Kill()
					<-done
					t.Fatalf("the push did not stop within 10s of %s:\n%s", phase.sig, logs)
				}
				took := time.Since(sent)
				t.Logf("%s: exited (%v) after %s: %s", phase.sig, err, took.Round(time.Millisecond), strings.TrimSpace(logs.String()))
				if err == nil {
					t.Fatalf("the push finished before the signal reached it (make the zip bigger)")
				}
				// Well within a second on an idle machine; 5 s leaves room
				// for a loaded one (the push not stopping is caught above:
				// it finishes, or runs into the 10 s guard).
				if took > 5*time.Second {
					t.Errorf("exited %s after %s, want within seconds", took.Round(time.Millisecond), phase.sig)
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

// bytesUnder sums the sizes of the files below dir.
func bytesUnder(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// waitFor polls cond until it holds, the process exits or d passes.
func waitFor(cond func() bool, done <-chan error, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		select {
		case <-done:
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false
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
	fds := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	return waitFor(func() bool {
		entries, _ := os.ReadDir(fds)
		for _, e := range entries {
			if target, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && target == p {
				return true
			}
		}
		return false
	}, done, d)
}
