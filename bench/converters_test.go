package bench

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

var sixPlatforms = []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64", "freebsd_amd64"}

// writeRelease writes a signed provider release of random zips.
func writeRelease(b *testing.B, dir, typ string, zipSize int64, platforms []string) {
	b.Helper()
	os.MkdirAll(dir, 0o755)
	sums := sha256sums.Sums{}
	for _, p := range platforms {
		name := fmt.Sprintf("terraform-provider-%s_1.0.0_%s.zip", typ, p)
		path := filepath.Join(dir, name)
		writeRandomZip(b, path, "terraform-provider-"+typ+"_v1.0.0", zipSize)
		f, _ := os.Open(path)
		sum, _, _ := pkghash.SHA256(f)
		f.Close()
		sums[name] = sum
	}
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("terraform-provider-%s_1.0.0_SHA256SUMS", typ)), sums.Bytes(), 0o644)
	signer, err := pgp.LoadSigner(testenv.Testdata(b, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		b.Fatal(err)
	}
	sig, _ := signer.Sign(sums.Bytes(), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("terraform-provider-%s_1.0.0_SHA256SUMS.sig", typ)), sig, 0o644)
}

// startServe runs `oci-tofu serve` for a benchmark.
func startServe(b *testing.B, bin string, args ...string) string {
	b.Helper()
	ca := testenv.NewCA(b)
	port := testenv.FreePort(b)
	cmd := exec.Command(bin, append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls-cert", ca.ServerCertFile, "--tls-key", ca.ServerKeyFile, "--log-level", "error"}, args...)...)
	cmd.Env = env(b)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	host := fmt.Sprintf("localhost:%d", port)
	client := ca.HTTPClient()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := client.Get("https://" + host + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return host
			}
		}
	}
	b.Fatal("oci-tofu serve did not start")
	return ""
}

// BenchmarkLock writes a lock file for 10 providers × 6 platforms from
// registry metadata, beside `tofu providers lock` with the same six
// -platform flags through the proxy's registry protocol (which downloads
// every package to hash it). Metric tofu/oci-tofu: goal ≥ 10.
func BenchmarkLock(b *testing.B) {
	const providers, zipSize = 10, 8 << 20
	bin := buildOCITofu(b)
	reg := testenv.StartRegistry(b)
	e := env(b)
	key := testenv.Testdata(b, "keys", "gocrypto-signer.asc")
	var required strings.Builder
	for i := 0; i < providers; i++ {
		typ := fmt.Sprintf("p%d", i)
		dir := filepath.Join(b.TempDir(), typ)
		writeRelease(b, dir, typ, zipSize, sixPlatforms)
		runMeasured(b, e, bin, "push", "provider", "--quiet", "--key", key, dir, reg.Host+"/bench/acme/"+typ)
	}
	proxy := startServe(b, bin, "--provider-template", reg.Host+"/bench/${namespace}/${type}")
	for i := 0; i < providers; i++ {
		fmt.Fprintf(&required, "    p%d = { source = %q, version = \"1.0.0\" }\n", i, proxy+"/acme/p"+fmt.Sprint(i))
	}
	cfg := "terraform {\n  required_providers {\n" + required.String() + "  }\n}\n"
	tofu := testenv.Tofu(b, "")
	lockArgs := []string{"lock", "--provider-template", reg.Host + "/bench/${namespace}/${type}"}
	tofuArgs := []string{"providers", "lock"}
	for _, p := range sixPlatforms {
		lockArgs = append(lockArgs, "--platform", p)
		tofuArgs = append(tofuArgs, "-platform="+p)
	}

	var ours, theirs time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d1 := testenv.WriteConfig(b, map[string]string{"main.tf": cfg})
		d, _ := runMeasured(b, e, bin, append(lockArgs, d1)...)
		ours += d
		d2 := testenv.WriteConfig(b, map[string]string{"main.tf": cfg})
		d, _ = runMeasured(b, tofu.Env, tofu.Path, append([]string{"-chdir=" + d2}, tofuArgs...)...)
		theirs += d
		// Both name the same hashes for the same packages.
		l1, _ := lockfile.Read(filepath.Join(d1, ".terraform.lock.hcl"))
		l2, err := lockfile.Read(filepath.Join(d2, ".terraform.lock.hcl"))
		if err != nil || len(l1.Providers) != providers || len(l2.Providers) != providers || len(l1.Providers[0].Hashes) != len(l2.Providers[0].Hashes) {
			b.Fatalf("lock files differ: %+v / %+v (%v)", l1.Providers[0], l2.Providers[0], err)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(ours.Seconds()/n, "oci-tofu-lock-s")
	b.ReportMetric(theirs.Seconds()/n, "tofu-providers-lock-s")
	b.ReportMetric(theirs.Seconds()/ours.Seconds(), "tofu/oci-tofu")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkMirror mirrors 5 providers × 6 platforms from an origin
// registry into a local registry, beside downloading the same files one by
// one with curl. The origin stands in for a remote registry: 30 ms before
// each answer and 16 MiB/s per connection (loopback alone would hide what
// parallel downloads are for). Metric mirror/curl: goal ≤ 0.7.
func BenchmarkMirror(b *testing.B) {
	const providers, zipSize = 5, 4 << 20
	curl, err := exec.LookPath("curl")
	if err != nil {
		b.Fatal("curl is needed as the reference")
	}
	bin := buildOCITofu(b)
	reg := testenv.StartRegistry(b)
	e := env(b)
	var releases []testenv.OriginRelease
	var specs []string
	for i := 0; i < providers; i++ {
		typ := fmt.Sprintf("m%d", i)
		dir := filepath.Join(b.TempDir(), typ)
		writeRelease(b, dir, typ, zipSize, sixPlatforms)
		releases = append(releases, testenv.OriginRelease{Namespace: "acme", Type: typ, Dir: dir, Key: testenv.Testdata(b, "keys", "gocrypto-signer.asc")})
	}
	origin := testenv.StartOriginWith(b, releases, testenv.OriginOptions{Latency: 30 * time.Millisecond, BytesPerSecond: 16 << 20})
	var urls []string
	for _, r := range releases {
		specs = append(specs, origin.Host+"/acme/"+r.Type)
		entries, _ := os.ReadDir(r.Dir)
		for _, f := range entries {
			urls = append(urls, "https://"+origin.Host+"/files/acme/"+r.Type+"/"+f.Name())
		}
	}
	var ours, theirs time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		args := append([]string{"mirror", "--quiet", "--provider-template", fmt.Sprintf("%s/run%d/${namespace}/${type}", reg.Host, i)}, specs...)
		d, _ := runMeasured(b, e, bin, args...)
		ours += d
		out := b.TempDir()
		start := time.Now()
		for j, u := range urls {
			runMeasured(b, e, curl, "-fsS", "--cacert", testenv.NewCA(b).CertFile, "-o", filepath.Join(out, fmt.Sprint(j)), u)
		}
		theirs += time.Since(start)
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(ours.Seconds()/n, "mirror-s")
	b.ReportMetric(theirs.Seconds()/n, "curl-sequential-s")
	b.ReportMetric(ours.Seconds()/theirs.Seconds(), "mirror/curl")
	b.ReportMetric(0, "ns/op")
}
