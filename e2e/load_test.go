package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Load on the proxy binary, as its own process with its defaults: 20,000
// requests from 32 clients at once — the documents tofu and terraform ask
// for, archives streamed from the registry, health checks — all answered
// correctly, with the proxy's peak memory bounded and its registry
// requests a fraction of the clients'.
func TestLoad(t *testing.T) {
	const (
		requests    = 20_000
		clients     = 32
		maxPeakMiB  = 128
		maxUpstream = requests / 5
	)
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "1.1.0")
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	s := startServe(t, "--provider-template", front.Host+"/providers/${namespace}/${type}", "--log-level", "warn")
	zip := fixtureZipSHA(t, "1.1.0", "linux_amd64")
	archive := archiveURL(t, s, "/v1/mirror/example.com/test/hello/1.1.0.json", "linux_amd64")
	paths := []string{
		"/v1/mirror/example.com/test/hello/index.json",
		"/v1/mirror/example.com/test/hello/1.0.0.json",
		"/v1/mirror/example.com/test/hello/1.1.0.json",
		"/v1/providers/test/hello/versions",
		"/v1/providers/test/hello/1.1.0/download/linux/amd64",
		"/v1/providers/test/hello/1.0.0/download/darwin/arm64",
		"/.well-known/terraform.json",
		"/healthz",
		archive,
		"/v1/mirror/example.com/test/hello/index.json",
	}
	front.ResetLog()
	rssBefore := s.rss(t)

	var next, failed atomic.Int64
	var mu sync.Mutex
	var firstErr string
	fail := func(format string, args ...any) {
		if failed.Add(1) == 1 {
			mu.Lock()
			firstErr = fmt.Sprintf(format, args...)
			mu.Unlock()
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= requests {
					return
				}
				path := paths[i%int64(len(paths))]
				resp, err := s.client.Get(s.URL + path)
				if err != nil {
					fail("%s: %v", path, err)
					continue
				}
				h := sha256.New()
				n, err := io.Copy(h, resp.Body)
				resp.Body.Close()
				switch {
				case err != nil:
					fail("%s: reading: %v", path, err)
				case resp.StatusCode != http.StatusOK:
					fail("%s: %d", path, resp.StatusCode)
				case resp.ContentLength >= 0 && n != resp.ContentLength:
					fail("%s: %d of %d bytes", path, n, resp.ContentLength)
				case path == archive && hex.EncodeToString(h.Sum(nil)) != zip:
					fail("%s: not the zip", path)
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	peak := s.peakRSS(t)
	upstream := len(front.Log())
	t.Logf("%d requests from %d clients in %s (%.0f/s), %d failed; %d registry requests; RSS %.1f MiB before, peak %.1f MiB",
		requests, clients, took.Round(time.Millisecond), float64(requests)/took.Seconds(), failed.Load(), upstream, rssBefore, peak)
	if failed.Load() != 0 {
		t.Errorf("%d requests failed; the first: %s", failed.Load(), firstErr)
	}
	if peak > maxPeakMiB {
		t.Errorf("peak RSS %.1f MiB, want at most %d", peak, maxPeakMiB)
	}
	if upstream > maxUpstream {
		t.Errorf("%d registry requests for %d client requests, want at most %d", upstream, requests, maxUpstream)
	}
	s.alive(t)
}
