package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// fleetArgs are the replicas' flags: pull-through from origin into reg,
// sharing state through redis (nil: each replica on its own).
func fleetArgs(reg *testenv.Registry, origin *testenv.Origin, redis *testenv.Redis) []string {
	args := pullThroughArgs(reg, origin)
	if redis != nil {
		// A Redis operation on this busy 2-core machine can take longer
		// than the 100 ms default, and a replica that gives up pulls on
		// its own: the single pull is what these tests check.
		args = append(args, "--shared-cache", redis.URL(), "--shared-cache-timeout", "2s")
	}
	return args
}

// mirrorArchives reads a network mirror <version>.json and returns each
// archive's absolute URL with its sha256 (from its zh: hash).
func mirrorArchives(c *http.Client, docURL string) (map[string]string, error) {
	resp, err := c.Get(docURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s: %d %s", docURL, resp.StatusCode, b)
	}
	var doc struct {
		Archives map[string]struct {
			URL    string   `json:"url"`
			Hashes []string `json:"hashes"`
		} `json:"archives"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, err
	}
	base, _ := url.Parse(docURL)
	out := map[string]string{}
	for _, a := range doc.Archives {
		u, err := base.Parse(a.URL)
		if err != nil {
			return nil, err
		}
		for _, h := range a.Hashes {
			if zh, ok := strings.CutPrefix(h, "zh:"); ok {
				out[u.String()] = zh
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s lists no archives", docURL)
	}
	return out, nil
}

// fetchChecked downloads u and checks its sha256.
func fetchChecked(c *http.Client, u, sha string) error {
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, resp.Body); err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: status %d", u, resp.StatusCode)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		return fmt.Errorf("%s: sha256 %s, want %s", u, got, sha)
	}
	return nil
}

// firstInstalls runs n concurrent first installs of hello version through
// the fleet: tofus real `tofu init`s, the rest HTTP clients fetching every
// archive the version's document lists, each checked.
func firstInstalls(t *testing.T, f *testenv.Fleet, version string, n, tofus int) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		if i < tofus {
			tofu := testenv.Tofu(t, fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = %q\n  }\n}\n", f.URL+"/v1/mirror/"))
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, version)})
			go func() {
				defer wg.Done()
				<-start
				if out, err := tofu.Try(t, dir, "init", "-input=false", "-no-color"); err != nil {
					errs[i] = fmt.Errorf("tofu init: %v\n%s", err, out)
				}
			}()
			continue
		}
		go func() {
			defer wg.Done()
			<-start
			archives, err := mirrorArchives(f.Client, f.URL+"/v1/mirror/example.com/test/hello/"+version+".json")
			for u, sha := range archives {
				if err == nil {
					err = fetchChecked(f.Client, u, sha)
				}
			}
			errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// A fleet of three replicas behind nginx sharing state on Redis: 30
// concurrent first installs (real tofu for a few, HTTP clients for the
// rest) spread over the replicas download each archive from the origin
// once, and the release is stored exactly as `oci-tofu mirror` pushes
// it. With Redis stopped, installs still succeed, the replicas say so in
// a metric and their logs (never the Redis password). Then 20,000 warm
// requests across the fleet: no error.
func TestFleetSharesPullThroughOnRedis(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	origin := testenv.StartOriginWith(t, []testenv.OriginRelease{
		{Namespace: "test", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.0.0"), Key: key},
		{Namespace: "test", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.1.0"), Key: key},
	}, testenv.OriginOptions{Latency: 200 * time.Millisecond})
	reg := testenv.StartRegistry(t)
	redis := testenv.StartRedis(t)
	f := testenv.StartFleet(t, ociTofu, 3, nil, fleetArgs(reg, origin, redis)...)
	for _, r := range f.Replicas {
		if !strings.Contains(r.Logs.String(), "shared cache: pull-through (who pulls a release, what was stored, what failed) and the page's record") {
			t.Errorf("a replica does not say what Redis is used for:\n%s", r.Logs.String())
		}
	}

	for i, err := range firstInstalls(t, f, "1.1.0", 30, 4) {
		if err != nil {
			t.Errorf("install %d: %v", i, err)
		}
	}
	got := waitForTag(t, reg, "pulled/example.com/test/hello", "1.1.0")
	for _, p := range helloPlatforms {
		if n := originGets(origin, helloZip("1.1.0", p)); n != 1 {
			t.Errorf("%s was downloaded from the origin %d times by 3 replicas, want once", helloZip("1.1.0", p), n)
		}
	}
	if want := mirroredDigest(t, reg, origin, "test", "hello", "1.1.0"); got != want {
		t.Errorf("pulled through as %s, mirror pushes %s", got, want)
	}
	served := 0
	for _, r := range f.Replicas {
		if strings.Contains(r.Logs.String(), "/v1/mirror/example.com/test/hello/1.1.0.json") || replicaServed(t, f, r) {
			served++
		}
	}
	if served < 2 {
		t.Errorf("only %d replicas served requests: nginx did not spread them", served)
	}

	redis.Stop()
	for i, err := range firstInstalls(t, f, "1.0.0", 6, 2) {
		if err != nil {
			t.Errorf("install %d with Redis stopped: %v", i, err)
		}
	}
	for _, r := range f.Replicas {
		if strings.Contains(r.Logs.String(), redis.Password) {
			t.Errorf("a replica logs the Redis password:\n%s", r.Logs.String())
		}
	}
	down := 0
	for _, r := range f.Replicas {
		m := replicaMetrics(t, f, r)
		if strings.Contains(m, redis.Password) {
			t.Error("the metrics show the Redis password")
		}
		if strings.Contains(m, "oci_tofu_shared_cache_up 0") {
			down++
		}
	}
	if down == 0 {
		t.Error("no replica's oci_tofu_shared_cache_up says Redis is down")
	}
	warmRequests(t, f, 20000)
}

// replicaServed reports whether a replica counted any provider request.
func replicaServed(t *testing.T, f *testenv.Fleet, r *testenv.Replica) bool {
	for _, line := range strings.Split(replicaMetrics(t, f, r), "\n") {
		if strings.HasPrefix(line, "oci_tofu_proxy_requests_total{") && strings.Contains(line, "network_mirror") && !strings.HasSuffix(line, " 0") {
			return true
		}
	}
	return false
}

func replicaMetrics(t *testing.T, f *testenv.Fleet, r *testenv.Replica) string {
	t.Helper()
	resp, err := f.Client.Get(r.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// warmRequests sends n requests for stored releases' documents and
// archives through nginx from 16 workers; every one must succeed.
func warmRequests(t *testing.T, f *testenv.Fleet, n int) {
	t.Helper()
	var urls []string
	shas := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		doc := f.URL + "/v1/mirror/example.com/test/hello/" + v + ".json"
		archives, err := mirrorArchives(f.Client, doc)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, doc, f.URL+"/v1/mirror/example.com/test/hello/index.json")
		for u, sha := range archives {
			urls = append(urls, u)
			shas[u] = sha
		}
	}
	var next, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				u := urls[int(i)%len(urls)]
				var err error
				if sha, ok := shas[u]; ok {
					err = fetchChecked(f.Client, u, sha)
				} else {
					err = fetchOK(f.Client, u)
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Errorf("%d of %d warm requests across the fleet failed, first: %v", failed.Load(), n, firstErr.Load())
	}
}

func fetchOK(c *http.Client, u string) error {
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s: status %d", u, resp.StatusCode)
	}
	return nil
}

// A replica killed with SIGKILL while it pulls a release (it holds the
// release's lease) leaves no tag behind; a request through nginx reaches
// another replica, which waits for the dead replica's lease to expire,
// takes the pull over, and stores the whole release, exactly as `oci-tofu
// mirror` pushes it.
func TestFleetReplicaKilledMidPull(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	// Slow answers, so the pull is still running when its replica dies.
	origin := testenv.StartOriginWith(t, []testenv.OriginRelease{
		{Namespace: "test", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.1.0"), Key: key},
	}, testenv.OriginOptions{Latency: 1500 * time.Millisecond})
	reg := testenv.StartRegistry(t)
	redis := testenv.StartRedis(t)
	f := testenv.StartFleet(t, ociTofu, 3, nil, fleetArgs(reg, origin, redis)...)
	victim := f.Replicas[0]

	archives, err := mirrorArchives(f.Client, victim.URL+"/v1/mirror/example.com/test/hello/1.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	for u := range archives {
		go fetchOK(f.Client, u) // broken off by the kill
		break
	}
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(victim.Logs.String(), "fetching a release from its origin"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not start pulling:\n%s", victim.Logs.String())
		}
	}
	victim.Kill()
	if strings.Contains(victim.Logs.String(), "release verified and stored") {
		t.Fatal("the pull finished before the kill: the origin is not slow enough for this test")
	}
	if d := tagDigest(t, reg, "pulled/example.com/test/hello", "1.1.0"); d != "" {
		t.Fatalf("a killed pull left the tag %s", d)
	}

	for i, err := range firstInstalls(t, f, "1.1.0", 3, 1) {
		if err != nil {
			t.Errorf("install %d after the kill: %v", i, err)
		}
	}
	got := waitForTag(t, reg, "pulled/example.com/test/hello", "1.1.0")
	if want := mirroredDigest(t, reg, origin, "test", "hello", "1.1.0"); got != want {
		t.Errorf("completed as %s, mirror pushes %s", got, want)
	}
	completed := 0
	for _, r := range f.Replicas[1:] {
		if strings.Contains(r.Logs.String(), "release verified and stored") {
			completed++
		}
	}
	if completed != 1 {
		t.Errorf("%d surviving replicas stored the release, want 1", completed)
	}
}
