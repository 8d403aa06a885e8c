package e2e

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// The proxy between clients and a misbehaving registry: a front that can
// answer any status, throttle, hang, truncate, garble, corrupt, loop its
// paging or lose the registry altogether sits between the built binary
// and a real Distribution registry. Each case checks the status the client
// sees, the number of requests the registry was sent for it, and that the
// proxy serves again once the registry behaves.
//
// The proxy runs with short TTLs (every request reads tags and tag
// resolutions afresh; content by digest stays cached) and remembers
// failures for failureTTL, so one request costs a known number of registry
// requests once warm: a tag list for index.json, a manifest by tag for
// <version>.json, the blob for an archive.
func TestFaults(t *testing.T) {
	reg := testenv.StartRegistry(t)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{TagPageSize: 50})
	pushProvider(t, reg.Credential(), reg.Host+"/providers/test/hello", "1.0.0")
	big := bigZip(t, 48<<20)
	pushThirdParty(t, reg, "providers/test/big", "1.0.0", "linux", "amd64", big)
	s := startServe(t, "--provider-template", front.Host+"/providers/${namespace}/${type}",
		"--tag-ttl", "1ms", "--resolve-ttl", "1ms", "--max-stale", "-1s", "--failure-ttl", failureTTL.String(),
		"--upstream-timeout", "2s", "--stall-timeout", "2s")
	const (
		index   = "/v1/mirror/example.com/test/hello/index.json"
		version = "/v1/mirror/example.com/test/hello/1.0.0.json"
	)
	archive := archiveURL(t, s, version, "linux_amd64")
	bigArchive := archiveURL(t, s, "/v1/mirror/example.com/test/big/1.0.0.json", "linux_amd64")
	for _, p := range []string{index, version, archive} {
		if code, body := s.get(t, p); code != 200 {
			t.Fatalf("warming up %s: %d %s", p, code, body)
		}
	}
	manifestByTag := func(r *http.Request) bool {
		return testenv.MatchManifests(r) && strings.HasSuffix(r.URL.Path, "/manifests/1.0.0")
	}
	for _, c := range []faultCase{
		{name: "429-retry-after-waited-out", path: index, rule: testenv.FaultRule{Match: testenv.MatchTagList, First: 1, Fault: testenv.TooManyRequests(time.Second)}, status: 200, minRequests: 2, maxRequests: 2, minTime: 900 * time.Millisecond},
		{name: "500-tag-list-retried", path: index, rule: rule(testenv.MatchTagList, testenv.ErrorAnswer(500, "UNKNOWN", "boom")), status: 502, minRequests: 3, maxRequests: 3},
		{name: "502-manifest-retried", path: version, rule: rule(manifestByTag, testenv.ErrorAnswer(502, "UNKNOWN", "bad gateway")), status: 502, minRequests: 3, maxRequests: 3},
		{name: "503-retry-after", path: index, rule: rule(testenv.MatchTagList, withRetryAfter(testenv.ErrorAnswer(503, "UNAVAILABLE", "maintenance"), "1")), status: 503, retryAfter: true, maxRequests: 3},
		{name: "429-every-answer", path: version, rule: rule(manifestByTag, testenv.TooManyRequests(time.Second)), status: 503, retryAfter: true, maxRequests: 3},
		{name: "401-manifest", path: version, rule: rule(manifestByTag, testenv.ErrorAnswer(401, "UNAUTHORIZED", "authentication required")), status: 502, maxRequests: 1},
		{name: "403-tag-list", path: index, rule: rule(testenv.MatchTagList, testenv.ErrorAnswer(403, "DENIED", "denied")), status: 502, maxRequests: 1},
		{name: "404-repository", path: index, rule: rule(testenv.MatchTagList, testenv.ErrorAnswer(404, "NAME_UNKNOWN", "repository name not known")), status: 404, maxRequests: 1},
		{name: "404-manifest", path: version, rule: rule(manifestByTag, testenv.ErrorAnswer(404, "MANIFEST_UNKNOWN", "manifest unknown")), status: 404, maxRequests: 1},
		{name: "hang-tag-list", path: index, rule: rule(testenv.MatchTagList, testenv.Fault{Hang: testenv.HangUntilClientLeaves}), status: 504, maxRequests: 1, maxTime: 5 * time.Second},
		// A connection that dies before any answer is resent by Go's
		// transport once per idle connection (a GET): a few requests.
		{name: "truncated-manifest", path: version, rule: rule(manifestByTag, testenv.Fault{Truncate: true, TruncateAfter: 100}), status: 502, maxRequests: idleResends},
		{name: "garbage-manifest", path: version, rule: rule(manifestByTag, testenv.Fault{Garbage: true}), status: 502, maxRequests: 1},
		{name: "garbage-tag-list", path: index, rule: rule(testenv.MatchTagList, testenv.Fault{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte("<html>not a registry</html>")}), status: 502, maxRequests: 1},
		{name: "digest-mismatch-manifest", path: version, rule: rule(manifestByTag, testenv.Fault{FlipByte: true}), status: 502, maxRequests: 1},
		// An archive whose blob does not verify is cut off before its last
		// bytes; the client (Go's, like tofu's) resends a GET cut off
		// before any answer once. The first archive request also reads its
		// platform manifest.
		{name: "digest-mismatch-blob", path: archive, rule: rule(testenv.MatchBlobGET, testenv.Fault{FlipByte: true}), broken: true, maxRequests: 3},
		{name: "truncated-blob", path: archive, rule: rule(testenv.MatchBlobGET, testenv.Fault{Truncate: true, TruncateAfter: 200}), broken: true, maxRequests: idleResends},
		{name: "hang-blob", path: archive, rule: rule(testenv.MatchBlobGET, testenv.Fault{Hang: testenv.HangUntilClientLeaves}), status: 504, maxRequests: 1, maxTime: 5 * time.Second},
		{name: "paging-loop", path: index, rule: rule(testenv.MatchTagList, testenv.Fault{PagingLoop: true}), status: 502, maxRequests: 3, setup: func(t *testing.T) { addVersionTags(t, reg, 60) }},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s, front) })
	}

	// The registry dies while a large archive streams: the client's
	// download breaks, the proxy lives on and serves again once the
	// registry is back.
	t.Run("registry-killed-mid-stream", func(t *testing.T) {
		front.SetFaults()
		resp, err := s.client.Get(s.URL + bigArchive)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := io.CopyN(io.Discard, resp.Body, 1<<20); err != nil || resp.StatusCode != 200 {
			t.Fatalf("first MiB: %d %v", resp.StatusCode, err)
		}
		reg.Stop()
		n, err := io.Copy(io.Discard, resp.Body)
		if err == nil && n+1<<20 == int64(len(big)) {
			t.Fatalf("the whole archive arrived although the registry died")
		}
		s.alive(t)
		if code, _ := s.get(t, index); code < 500 {
			t.Errorf("index.json with the registry down: %d", code)
		}
		reg.Start(t)
		time.Sleep(failureTTL + 100*time.Millisecond)
		for _, p := range []string{index, version, bigArchive} {
			if code, body := s.get(t, p); code != 200 {
				t.Errorf("%s once the registry is back: %d %.200s", p, code, body)
			}
		}
	})
	s.alive(t)
}

// failureTTL is how long the proxy under test remembers a failure.
const failureTTL = 500 * time.Millisecond

// idleResends bounds the requests one GET becomes when the registry's
// connection dies before answering: Go's transport sends it again on each
// idle connection it holds to the registry, then once on a new one.
const idleResends = 10

// faultCase is one misbehaviour and what the client must see.
type faultCase struct {
	name string
	path string
	rule testenv.FaultRule
	// status is the status the client must get; broken means the client
	// must not get a complete 200 (an error status, an aborted stream or
	// a short body all do).
	status int
	broken bool
	// retryAfter: a Retry-After header must come with the answer.
	retryAfter bool
	// minRequests and maxRequests bound what the registry (the front) is
	// sent for the one request.
	minRequests, maxRequests int
	// minTime and maxTime bound the answer's delay.
	minTime, maxTime time.Duration
	setup            func(t *testing.T)
}

func rule(match func(*http.Request) bool, f testenv.Fault) testenv.FaultRule {
	return testenv.FaultRule{Match: match, Fault: f}
}

func withRetryAfter(f testenv.Fault, secs string) testenv.Fault {
	f.Header.Set("Retry-After", secs)
	return f
}

func (c faultCase) run(t *testing.T, s *served, front *testenv.Front) {
	if c.setup != nil {
		c.setup(t)
	}
	time.Sleep(failureTTL + 100*time.Millisecond) // earlier cases' failures forgotten
	front.SetFaults(c.rule)
	front.ResetLog()
	start := time.Now()
	status, complete, header := fetch(t, s, c.path)
	took := time.Since(start)
	time.Sleep(200 * time.Millisecond) // anything still running would show in the log now
	log := withoutIndexReads(t, front.Log())
	front.SetFaults()
	switch {
	case c.broken && status == 200 && complete:
		t.Errorf("the download arrived complete although the registry misbehaved")
	case !c.broken && status != c.status:
		t.Errorf("status %d, want %d", status, c.status)
	}
	if c.retryAfter && header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After with the %d", status)
	}
	if n := len(log); n > c.maxRequests || n < c.minRequests {
		t.Errorf("the registry was sent %d requests, want %d to %d:\n%s", n, c.minRequests, c.maxRequests, entries(log))
	}
	if c.minTime > 0 && took < c.minTime || c.maxTime > 0 && took > c.maxTime {
		t.Errorf("answered after %s, want %s to %s", took, c.minTime, c.maxTime)
	}
	// Recovery: once the registry behaves (and the failure is forgotten),
	// the same request succeeds.
	time.Sleep(failureTTL + 100*time.Millisecond)
	if status, complete, _ := fetch(t, s, c.path); status != 200 || !complete {
		t.Errorf("after the fault: %d (complete %v)", status, complete)
	}
	s.alive(t)
}

// fetch GETs a path and reads the whole answer: its status, whether it
// arrived complete (as long as its Content-Length says, without error),
// and its header.
func fetch(t *testing.T, s *served, path string) (int, bool, http.Header) {
	t.Helper()
	resp, err := s.client.Get(s.URL + path)
	if err != nil {
		return 0, false, nil
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	complete := err == nil && (resp.ContentLength < 0 || n == resp.ContentLength)
	return resp.StatusCode, complete, resp.Header
}

func entries(log []testenv.AccessEntry) string {
	var b strings.Builder
	for _, e := range log {
		fmt.Fprintln(&b, e)
	}
	return b.String()
}

// archiveURL is the proxy path of a platform's archive, from the mirror's
// <version>.json.
func archiveURL(t *testing.T, s *served, versionPath, platform string) string {
	t.Helper()
	var doc struct {
		Archives map[string]struct {
			URL string `json:"url"`
		} `json:"archives"`
	}
	getJSON(t, s, versionPath, &doc)
	a, ok := doc.Archives[platform]
	if !ok {
		t.Fatalf("%s lists no %s archive: %+v", versionPath, platform, doc)
	}
	if abs, err := url.Parse(a.URL); err == nil && abs.IsAbs() {
		// Absolute URLs name the host the client used.
		if abs.Host != s.Host {
			t.Fatalf("%s: archive URL %s is not on %s", versionPath, a.URL, s.Host)
		}
		return abs.RequestURI()
	}
	dir := versionPath[:strings.LastIndex(versionPath, "/")+1]
	u := dir + a.URL
	// Resolve the ../ segments as a client does.
	parts := strings.Split(u, "/")
	var out []string
	for _, p := range parts {
		if p == ".." {
			out = out[:len(out)-1]
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, "/")
}

// bigZip is a provider zip holding one incompressible file of about n
// bytes.
func bigZip(t *testing.T, n int) []byte {
	t.Helper()
	data := make([]byte, n)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	z := testenv.CraftZip(t, testenv.ZipEntry{Name: "terraform-provider-big", Data: data})
	if !bytes.HasPrefix(z, []byte("PK")) {
		t.Fatal("not a zip")
	}
	return z
}
