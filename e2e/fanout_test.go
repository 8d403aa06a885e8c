package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Upstream work is bounded by what callers wait for: after the first
// failure of a fan-out, the fetches still outstanding are cancelled, and a
// throttling registry is not asked again and again. Each case counts the
// requests that reached the registry (through a front) and the proxy's
// peak resident memory, measured on the built binary as its own process.
func TestFanOutBounded(t *testing.T) {
	t.Run("index-of-missing-manifests", func(t *testing.T) {
		reg := testenv.StartRegistry(t)
		front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
		storeManifest(t, reg, "providers/fan/wide", providerIndexOfMissingManifests(t, 5000), "1.0.0")
		s := startServe(t, "--provider-template", front.Host+"/providers/${namespace}/${type}")
		before := s.peakRSS(t)
		for _, path := range []string{
			"/v1/mirror/example.com/fan/wide/1.0.0.json",
			"/v1/providers/fan/wide/1.0.0/download/linux/arch0",
			"/v1/mirror/example.com/fan/wide/1.0.0.json", // remembered failure
		} {
			code, body := s.get(t, path)
			if code < 400 || code >= 600 {
				t.Errorf("%s: %d %s", path, code, body)
			}
			t.Logf("%s: %d %s", path, code, body)
		}
		time.Sleep(2 * time.Second) // anything still running would show now
		n := len(front.Log())
		t.Logf("registry requests: %d; peak RSS %.1f MiB (%.1f before)", n, s.peakRSS(t), before)
		s.alive(t)
	})
	t.Run("versions-throttled", func(t *testing.T) {
		reg := testenv.StartRegistry(t)
		body := providerIndexOfMissingManifests(t, 1)
		tags := make([]string, 3000)
		for i := range tags {
			tags[i] = fmt.Sprintf("1.0.%d", i)
		}
		storeManifest(t, reg, "providers/fan/many", body, tags...)
		front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{
			Match: testenv.MatchManifests, Fault: testenv.TooManyRequests(time.Second),
		}}})
		s := startServe(t, "--provider-template", front.Host+"/providers/${namespace}/${type}")
		start := time.Now()
		resp, err := s.client.Get(s.URL + "/v1/providers/fan/many/versions")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		t.Logf("versions: %d Retry-After %q after %s", resp.StatusCode, resp.Header.Get("Retry-After"), time.Since(start))
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("status %d, want 503", resp.StatusCode)
		}
		time.Sleep(3 * time.Second)
		n := len(front.Log())
		t.Logf("registry requests: %d; peak RSS %.1f MiB", n, s.peakRSS(t))
		s.alive(t)
	})
}
