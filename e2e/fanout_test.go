package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Bounds of the proxy's work under hostile content and a refusing
// registry, for the built binary as its own process (defaults but for the
// template): its requests to the registry, counted by the front, and its
// peak resident memory (VmHWM).
const (
	// registryConcurrency is serve's --registry-concurrency default, which
	// is also the store's fan-out bound: at most that many reads of one
	// fan-out are in flight when its first failure cancels the rest.
	registryConcurrency = store.DefaultConcurrency
	// retryBudget is the etiquette's retry budget per host (half its
	// tokens): retries allowed while a registry refuses everything.
	retryBudget = 10
	// maxPeakRSSMiB bounds the proxy's peak resident memory in these
	// tests (it starts at about 20 MiB; before the fan-out bounds, the
	// 5,000-entry index took it to 473 MB).
	maxPeakRSSMiB = 96
)

// Upstream work is bounded by what callers wait for: after the first
// failure of a fan-out the reads still outstanding are cancelled, failures
// are remembered, one index is at most oci.MaxIndexEntries entries, and a
// throttling registry is not asked again and again.
func TestFanOutBounded(t *testing.T) {
	// An index of 5,000 platforms whose manifests are missing: refused
	// whole (more entries than any release has), with one read.
	t.Run("index-of-5000-missing-manifests", func(t *testing.T) {
		reg := testenv.StartRegistry(t)
		front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
		storeManifest(t, reg, "providers/fan/wide", providerIndexOfMissingManifests(t, 5000), "1.0.0")
		s := startServe(t, "--provider-template", front.Host+"/providers/${namespace}/${type}")
		for _, path := range []string{
			"/v1/mirror/example.com/fan/wide/1.0.0.json",
			"/v1/providers/fan/wide/1.0.0/download/linux/arch0",
			"/v1/mirror/example.com/fan/wide/1.0.0.json", // the failure, remembered
		} {
			if code, body := s.get(t, path); code != http.StatusBadGateway {
				t.Errorf("%s: %d %s", path, code, body)
			}
		}
		assertBounded(t, s, front, 2)
	})
	// An index within the bound whose manifests are all missing: the
	// first missing one ends the fan-out and cancels the reads in flight.
	t.Run("index-of-255-missing-manifests", func(t *testing.T) {
		reg := testenv.StartRegistry(t)
		front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
		storeManifest(t, reg, "providers/fan/wide", providerIndexOfMissingManifests(t, 255), "1.0.0")
		s := startServe(t, "--provider-template", front.Host+"/providers/${namespace}/${type}")
		for _, path := range []string{
			"/v1/mirror/example.com/fan/wide/1.0.0.json",
			"/v1/mirror/example.com/fan/wide/1.0.0.json",
		} {
			if code, body := s.get(t, path); code != http.StatusBadGateway {
				t.Errorf("%s: %d %s", path, code, body)
			}
		}
		assertBounded(t, s, front, 1+registryConcurrency)
	})
	// One /versions request for 3,000 versions of a registry that answers
	// every manifest request with 429: one wave of reads, a few retries,
	// then 503 with Retry-After — not thousands of requests.
	t.Run("3000-versions-throttled", func(t *testing.T) {
		reg := testenv.StartRegistry(t)
		storeManifest(t, reg, "providers/fan/many", providerIndexOfMissingManifests(t, 1), versionTags(3000)...)
		front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{
			Match: testenv.MatchManifests, Fault: testenv.TooManyRequests(time.Second),
		}}})
		s := startServe(t, "--provider-template", front.Host+"/providers/${namespace}/${type}")
		resp, err := s.client.Get(s.URL + "/v1/providers/fan/many/versions")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("status %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		const tagPages = 3 // 3,000 tags, 1,000 a page
		assertBounded(t, s, front, tagPages+registryConcurrency+retryBudget)
	})
	// With an --upstream-timeout shorter than the registry's Retry-After
	// (8 s, within the 10 s the proxy would wait), a throttled registry
	// is still a 503 (come back later), not a 504: requests that could
	// not wait out the pause are refused at once, in under half the
	// timeout (room for a loaded machine; a proxy that waited for its
	// timeout would take all of it).
	t.Run("throttled-short-timeout", func(t *testing.T) {
		const upstreamTimeout = 4 * time.Second
		reg := testenv.StartRegistry(t)
		storeManifest(t, reg, "providers/fan/slow", providerIndexOfMissingManifests(t, 1), versionTags(3)...)
		front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{
			Match: testenv.MatchManifests, Fault: testenv.TooManyRequests(2 * upstreamTimeout),
		}}})
		s := startServe(t, "--provider-template", front.Host+"/providers/${namespace}/${type}", "--upstream-timeout", upstreamTimeout.String())
		for _, v := range versionTags(3) {
			start := time.Now()
			resp, err := s.client.Get(s.URL + "/v1/mirror/example.com/fan/slow/" + v + ".json")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || time.Since(start) > upstreamTimeout/2 {
				t.Errorf("%s: %d Retry-After %q after %s; want 503 with Retry-After at once", v, resp.StatusCode, resp.Header.Get("Retry-After"), time.Since(start))
			}
		}
		assertBounded(t, s, front, 1)
	})
}

// withoutStartupCheck leaves out the GET /v2/ serve sends once at start
// to check the registry answers: what is bounded is the work requests cause.
func withoutStartupCheck(log []testenv.AccessEntry) []testenv.AccessEntry {
	var out []testenv.AccessEntry
	for _, e := range log {
		if e.Path != "/v2/" {
			out = append(out, e)
		}
	}
	return out
}

// withoutIndexReads leaves out the reads of a repository's version index
// (tag oci-tofu.versions, docs/artifacts.md) that a listing or a cold
// resolution of a version sends beside the tags, for its hints; t fails
// when a repository's index was asked for more often than one read and
// the etiquette's retries of it. What is bounded is the work of the
// versions' own reads.
func withoutIndexReads(t *testing.T, log []testenv.AccessEntry) []testenv.AccessEntry {
	t.Helper()
	var out []testenv.AccessEntry
	reads := map[string]int{}
	for _, e := range log {
		if strings.HasSuffix(e.Path, "/manifests/"+versionindex.Tag) {
			if reads[e.Path]++; reads[e.Path] == 2+retryBudget {
				t.Errorf("the version index %s was asked for more than once and %d retries:\n%s", e.Path, retryBudget, entries(log))
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// versionTags are the tags 1.0.0 … 1.0.(n-1).
func versionTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("1.0.%d", i)
	}
	return tags
}

// assertBounded checks, once anything still running would have shown,
// that the registry was sent at most maxRequests requests, that the
// proxy's peak memory stayed within maxPeakRSSMiB, and that it lives.
func assertBounded(t *testing.T, s *served, front *testenv.Front, maxRequests int) {
	t.Helper()
	time.Sleep(2 * time.Second)
	log := withoutIndexReads(t, withoutStartupCheck(front.Log()))
	peak := s.peakRSS(t)
	t.Logf("%d registry requests, peak RSS %.1f MiB", len(log), peak)
	if len(log) > maxRequests {
		t.Errorf("the registry was sent %d requests, want at most %d:\n%s", len(log), maxRequests, entries(log))
	}
	if peak > maxPeakRSSMiB {
		t.Errorf("peak RSS %.1f MiB, want at most %d", peak, maxPeakRSSMiB)
	}
	s.alive(t)
}
