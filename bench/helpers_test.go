package bench

import (
	"archive/zip"
	"crypto/rand"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// buildOCITofu builds the binary once per benchmark run.
func buildOCITofu(b *testing.B) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), "oci-tofu")
	cmd := exec.Command("go", "build", "-o", out, "../cmd/oci-tofu")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	return out
}

// writeRandomZip writes a zip holding one stored (uncompressed) entry of n
// random bytes: incompressible, like a provider binary after compression.
func writeRandomZip(b *testing.B, path, entry string, n int64) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: entry, Method: zip.Store, Modified: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyN(w, rand.Reader, n); err != nil {
		b.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		b.Fatal(err)
	}
}

// runMeasured runs a command and returns its wall time and peak RSS in MiB.
func runMeasured(b *testing.B, env []string, name string, args ...string) (time.Duration, float64) {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(start)
	if err != nil {
		b.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	rss := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
	return elapsed, rss
}

func env(b *testing.B) []string {
	return append(os.Environ(), "SSL_CERT_FILE="+testenv.NewCA(b).CertFile, "DOCKER_CONFIG="+b.TempDir())
}
