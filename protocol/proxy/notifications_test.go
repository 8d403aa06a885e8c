package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/notify"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

const notifySecret = "s3cret-notifications-0123456789"

// notifiedProxy is a proxy serving the providers of reg (or of host,
// before reg starts) with --tag-ttl 1h and notifications on, and a
// plain-HTTP listener on loopback for the registry to notify.
func notifiedProxy(t *testing.T, reg *testenv.Registry, shared sharedstate.Store) (*proxy, string) {
	t.Helper()
	p := startProxy(t, Options{Client: registryClient(t, reg), ProviderMappings: mustMapping(t, reg.Host+"/p/${namespace}/${type}"),
		Store: store.Options{TagTTL: time.Hour, ResolveTTL: time.Hour}, Notifications: &Notifications{Secret: []byte(notifySecret)}, Shared: shared})
	plain := httptest.NewServer(p.Server)
	t.Cleanup(plain.Close)
	return p, plain.URL + notify.Path
}

// listed is what /versions lists of test/hello.
func listed(t *testing.T, p *proxy) []string {
	t.Helper()
	var vd versionsDoc
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	var out []string
	for _, v := range vd.Versions {
		out = append(out, v.Version)
	}
	return out
}

// waitListed polls /versions for up to 2 s until it lists want: a
// bounded wait, the promise notifications make.
func waitListed(t *testing.T, p *proxy, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := listed(t, p)
		if slices.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/versions lists %v 2 s after the push, not %s", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A version pushed to Distribution directly (not through the proxy) is
// listed within 2 s with --tag-ttl 1h: Distribution notifies the proxy,
// which drops the repository's tag list and the documents built on it.
// Without the notification the listing stays as cached.
func TestDistributionNotificationShowsPushAtOnce(t *testing.T) {
	var p *proxy
	reg := testenv.StartRegistryNotifying(t, func(r *testenv.Registry) testenv.Notifying {
		var u string
		p, u = notifiedProxy(t, r, nil)
		return testenv.Notifying{URL: u, Authorization: "Bearer " + notifySecret}
	})
	repo := registryRepo(t, reg, "p/test/hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	waitListed(t, p, "1.0.0")

	push(t, repo, releaseArtifact(t, "1.1.0"), "1.1.0")
	waitListed(t, p, "1.1.0")
	if b := p.notifications.receiver.Batches(); b == 0 {
		t.Fatal("no batch applied: the version was not shown for the notification")
	}
	if m := p.get(t, "/metrics"); !strings.Contains(string(m.Body), "oci_tofu_proxy_notification_batches_total ") || strings.Contains(string(m.Body), "oci_tofu_proxy_notification_batches_total 0\n") {
		t.Errorf("the batches are not counted in /metrics")
	}

	// The control: an unnotified proxy keeps its listing for --tag-ttl.
	quiet := startProxy(t, Options{Client: registryClient(t, reg), ProviderMappings: mustMapping(t, reg.Host+"/p/${namespace}/${type}"),
		Store: store.Options{TagTTL: time.Hour}})
	if got := listed(t, quiet); !slices.Equal(got, []string{"1.1.0", "1.0.0"}) && !slices.Equal(got, []string{"1.0.0", "1.1.0"}) {
		t.Fatalf("the quiet proxy lists %v", got)
	}
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.2.0") // another tag of one release: listed all the same
	waitListed(t, p, "1.2.0")
	if got := listed(t, quiet); slices.Contains(got, "1.2.0") {
		t.Fatalf("the proxy without notifications lists %v: the test shows nothing", got)
	}
}

// notifyPost posts body with the given Authorization and content type.
func notifyPost(t *testing.T, u, auth, contentType string, body []byte) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func distributionEnvelope(host string, repos ...string) []byte {
	var events []map[string]any
	for _, r := range repos {
		events = append(events, map[string]any{"action": "push", "target": map[string]any{"repository": r, "tag": "9.9.9", "mediaType": "application/vnd.oci.image.index.v1+json"},
			"request": map[string]any{"host": host, "method": "PUT"}})
	}
	b, _ := json.Marshal(map[string]any{"events": events})
	return b
}

const distributionType = "application/vnd.docker.distribution.events.v1+json"

// Hostile notifications: a bad or missing secret is 401 and invalidates
// nothing; 10 MB is 413; bad JSON 400; a repository of another registry
// or outside the templates does nothing; 10,000 notifications in a burst
// cost a bounded number of batches and registry reads, and serving goes
// on.
func TestNotificationsHostile(t *testing.T) {
	reg := testenv.StartRegistryWithAccessLog(t)
	repo := registryRepo(t, reg, "p/test/hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	p, u := notifiedProxy(t, reg, nil)
	if got := listed(t, p); !slices.Equal(got, []string{"1.0.0"}) {
		t.Fatalf("lists %v", got)
	}
	push(t, repo, releaseArtifact(t, "1.1.0"), "1.1.0") // unnotified yet
	valid := distributionEnvelope(reg.Host, "p/test/hello")
	for name, auth := range map[string]string{"none": "", "wrong": "Bearer not-the-secret-at-all-0000", "prefix": "Bearer " + notifySecret[:20],
		"longer": "Bearer " + notifySecret + "x", "basic wrong": "Basic dXNlcjp3cm9uZw=="} {
		if st, body := notifyPost(t, u, auth, distributionType, valid); st != http.StatusUnauthorized {
			t.Errorf("%s secret: %d %s, want 401", name, st, body)
		}
	}
	if st, body := notifyPost(t, u, "Bearer nope", distributionType, bytes.Repeat([]byte("x"), 10<<20)); st != http.StatusUnauthorized {
		t.Errorf("10 MB unauthenticated: %d %s, want 401", st, body)
	}
	good := "Bearer " + notifySecret
	if st, _ := notifyPost(t, u, good, distributionType, append([]byte(`{"events":[`), bytes.Repeat([]byte(" "), 10<<20)...)); st != http.StatusRequestEntityTooLarge {
		t.Errorf("10 MB: %d, want 413", st)
	}
	for _, bad := range []string{`{"events":`, `not json`, `{"events":{"a":1}}`, `{}`, ``, `{"events":[{"action":"push","target":"x"}]}`} {
		if st, body := notifyPost(t, u, good, distributionType, []byte(bad)); st != http.StatusBadRequest {
			t.Errorf("%q: %d %s, want 400", bad, st, body)
		}
	}
	if st, _ := notifyPost(t, u, good, distributionType, distributionEnvelope(reg.Host, slices.Repeat([]string{"p/test/hello"}, notify.MaxEvents+1)...)); st != http.StatusRequestEntityTooLarge {
		t.Errorf("%d events: %d, want 413", notify.MaxEvents+1, st)
	}
	for _, other := range [][]byte{distributionEnvelope("elsewhere.example:5000", "p/test/hello"), distributionEnvelope(reg.Host, "q/test/hello", "p/too/deep/x")} {
		if st, body := notifyPost(t, u, good, distributionType, other); st != http.StatusAccepted || !strings.Contains(body, `"repositories":0`) {
			t.Errorf("another registry's repository: %d %s, want 202 and none", st, body)
		}
	}
	if b := p.notifications.receiver.Batches(); b != 0 {
		t.Fatalf("%d batches applied for notifications that should do nothing", b)
	}
	if got := listed(t, p); !slices.Equal(got, []string{"1.0.0"}) {
		t.Fatalf("after the refused notifications the proxy lists %v: something was invalidated", got)
	}

	// The flood: 10,000 notifications (10 at a time, concurrently).
	before := len(tagListReads(reg))
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				repos := make([]string, 10)
				for j := range repos {
					repos[j] = fmt.Sprintf("p/flood%d/r%d", w, (i*10+j)%50)
				}
				repos[0] = "p/test/hello"
				if st, body := notifyPost(t, u, good, distributionType, distributionEnvelope(reg.Host, repos...)); st != http.StatusAccepted {
					t.Errorf("flood: %d %s", st, body)
					return
				}
				if i%20 == 0 {
					listed(t, p) // serving goes on meanwhile
				}
			}
		}()
	}
	wg.Wait()
	waitListed(t, p, "1.1.0")
	batches := p.notifications.receiver.Batches()
	reads := len(tagListReads(reg)) - before
	t.Logf("10,000 notifications: %d batches, %d tag list reads", batches, reads)
	if reads > int(batches)+1 {
		t.Errorf("%d tag list reads for %d batches: a read per notification, not per batch", reads, batches)
	}
	if batches > 1000 {
		t.Errorf("%d batches for 1,000 requests: not coalesced", batches)
	}
}

// tagListReads are the registry's answers to tag list reads of
// p/test/hello.
func tagListReads(reg *testenv.Registry) []string {
	var out []string
	for _, l := range reg.AccessLog() {
		if strings.Contains(l, "/v2/p/test/hello/tags/list") {
			out = append(out, l)
		}
	}
	return out
}
