package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// BenchmarkRedirectDelivery measures the proxy's CPU per archive download
// with --archive-delivery redirect before a registry that redirects blob
// downloads to storage (a front sending them to a separate TLS server),
// against streaming the same 256 MiB archive through a proxy in the
// default mode, in the same run (goal: under 2 ms per download, whatever
// the archive's size). Each redirected download is the proxy's 307; a few
// are followed to the storage to check they deliver the archive.
func BenchmarkRedirectDelivery(b *testing.B) {
	const archiveSize = 256 << 20
	reg := testenv.StartRegistry(b)
	proxyPushBigProvider(b, reg, "bench/acme/big", archiveSize)
	front := testenv.StartFrontFor(b, reg, testenv.FrontOptions{Redirect: testenv.RedirectOtherHost})
	bin := buildOCITofu(b)
	redirecting, redirectPid := startBenchProxy(b, bin, reg.CA, front.Host, "--archive-delivery", "redirect")
	streaming, streamPid := startBenchProxy(b, bin, reg.CA, reg.Host)
	client := proxyClient(reg.CA)
	noFollow := proxyClient(reg.CA)
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	archive := func(base string) string {
		doc := base + "/v1/mirror/example.com/acme/big/1.0.0.json"
		return proxyResolve(b, doc, proxyArchiveURL(b, proxyGet(b, client, doc)))
	}
	redirectURL, streamURL := archive(redirecting), archive(streaming)
	for i := 0; i < 2; i++ { // followed to the storage: the archive arrives
		proxyStream(b, client, redirectURL, archiveSize)
	}

	b.ResetTimer()
	const redirects, streams = 500, 3
	var redirectCPU, streamCPU []float64
	for i := 0; i < b.N; i++ {
		before := procCPU(b, redirectPid)
		for j := 0; j < redirects; j++ {
			redirectOnce(b, noFollow, redirectURL, front.Redirects.URL)
		}
		redirectCPU = append(redirectCPU, (procCPU(b, redirectPid)-before).Seconds()*1000/redirects)
		before = procCPU(b, streamPid)
		for j := 0; j < streams; j++ {
			proxyStream(b, client, streamURL, archiveSize)
		}
		streamCPU = append(streamCPU, (procCPU(b, streamPid)-before).Seconds()*1000/streams)
	}
	b.StopTimer()
	r, s := median(redirectCPU), median(streamCPU)
	b.ReportMetric(r, "redirect-cpu-ms/download")
	b.ReportMetric(s, "stream-cpu-ms/download")
	b.ReportMetric(r/s, "redirect/stream")
	b.ReportMetric(0, "ns/op")
}

// startBenchProxy starts the built binary serving the providers of
// registry host under bench/, and returns its URL and process id.
func startBenchProxy(b *testing.B, bin string, ca *testenv.CA, host string, args ...string) (string, int) {
	port := testenv.FreePort(b)
	cmd := exec.Command(bin, append([]string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port),
		"--tls-cert", ca.ServerCertFile, "--tls-key", ca.ServerKeyFile,
		"--provider-template", host + "/bench/${namespace}/${type}", "--log-level", "error"}, args...)...)
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+ca.CertFile, "DOCKER_CONFIG="+b.TempDir())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	u := fmt.Sprintf("https://localhost:%d", port)
	proxyWaitHealthy(b, proxyClient(ca), u)
	return u, cmd.Process.Pid
}

// redirectOnce asks for an archive and checks it is sent to the storage.
func redirectOnce(b *testing.B, c *http.Client, u, storage string) {
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || !strings.HasPrefix(resp.Header.Get("Location"), storage+"/") {
		b.Fatalf("GET %s: %d to %q; want a redirect to the storage", u, resp.StatusCode, resp.Header.Get("Location"))
	}
}
