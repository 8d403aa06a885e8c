package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// notifiedRegistryReads is the registry requests for p/test/hello in
// its access log from index from on.
func notifiedRegistryReads(reg *testenv.Registry, from int) []string {
	var out []string
	for _, l := range reg.AccessLog()[from:] {
		if strings.Contains(l, "/v2/p/test/hello/") {
			out = append(out, l)
		}
	}
	return out
}

// A notification of one tag re-reads the repository's tag list and that
// tag, not every tag's manifest: a provider of 20 versions cost 21
// registry reads per push notified (per replica; and per batch for a
// sender repeating it), a provider of 500 versions 501. A tag the
// notification names is read again though it was cached (a moved tag
// shows at once); one pushed by digest alone re-reads the list only.
func TestTagNotificationRereadsThatTag(t *testing.T) {
	reg := testenv.StartRegistryWithAccessLog(t)
	repo := registryRepo(t, reg, "p/test/hello")
	first := releaseArtifact(t, "1.0.0")
	for i := range 20 {
		push(t, repo, first, fmt.Sprintf("1.%d.0", i))
	}
	p, u := notifiedProxy(t, reg, nil)
	shasum := func() string {
		var d struct {
			Shasum string `json:"shasum"`
		}
		resp := p.get(t, "/v1/providers/test/hello/1.3.0/download/linux/amd64")
		if err := json.Unmarshal(resp.Body, &d); err != nil || d.Shasum == "" {
			t.Fatalf("download: %d %s", resp.Status, resp.Body)
		}
		return d.Shasum
	}
	warm := func() string { listed(t, p); return shasum() }
	before := warm()
	notify := func(body string) {
		t.Helper()
		from := p.notifications.receiver.Batches()
		if st, b := notifyPost(t, u, "Bearer "+notifySecret, distributionType, []byte(body)); st != http.StatusAccepted {
			t.Fatalf("%d %s", st, b)
		}
		for deadline := time.Now().Add(2 * time.Second); p.notifications.receiver.Batches() == from; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the notification was not applied")
			}
		}
	}
	event := func(action, tag string) string {
		return fmt.Sprintf(`{"events":[{"action":%q,"target":{"repository":"p/test/hello","tag":%q,"digest":"sha256:00"},"request":{"host":%q}}]}`, action, tag, reg.Host)
	}

	n := len(reg.AccessLog())
	notify(event("push", "9.9.9"))
	warm()
	if reads := notifiedRegistryReads(reg, n); len(reads) > 2 {
		t.Errorf("a notified push of one tag: %d registry reads, want the list and the tag:\n%s", len(reads), strings.Join(reads, "\n"))
	}

	n = len(reg.AccessLog())
	notify(event("push", ""))
	warm()
	if reads := notifiedRegistryReads(reg, n); len(reads) != 1 || !strings.Contains(reads[0], "/tags/list") {
		t.Errorf("a notified push by digest: registry reads %v, want the list alone", reads)
	}

	push(t, repo, releaseArtifact(t, "1.1.0"), "1.3.0") // the tag moves
	notify(event("push", "1.3.0"))
	if after := warm(); after == before {
		t.Errorf("1.3.0 moved and was notified, but its download still says %s", before)
	}

	n = len(reg.AccessLog())
	notify(event("delete", ""))
	warm()
	if reads := notifiedRegistryReads(reg, n); len(reads) < 20 {
		t.Errorf("a notified delete by digest: %d registry reads, want every tag read again (any may have gone)", len(reads))
	}
}

// flood posts notifications from 8 senders for d, each body made by
// body(sender, round), and returns how many were answered with want.
func flood(t *testing.T, u, auth string, d time.Duration, want int, body func(sender, round int) []byte) int {
	t.Helper()
	var mu sync.Mutex
	answered := 0
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; time.Now().Before(stop); round++ {
				st, b := notifyPost(t, u, auth, distributionType, body(w, round))
				if st != want {
					t.Errorf("%d %s, want %d", st, b, want)
					return
				}
				mu.Lock()
				answered++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return answered
}

// What floods of notifications cost a proxy serving warm: with a wrong
// secret nothing at all (no batch, no registry read); with the secret,
// naming ever new repositories (each request 1,000 of them, over the
// bound of 1,024 pending every two), one drop of every repository at
// once, and then none for AllInterval: the warm listing is read from the
// registry again once, not at every batch (8 times in 2 s before).
func TestNotificationFloodsKeepServingWarm(t *testing.T) {
	reg := testenv.StartRegistryWithAccessLog(t)
	repo := registryRepo(t, reg, "p/test/hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	p, u := notifiedProxy(t, reg, nil)
	listed(t, p)
	warmUntil := func(stop <-chan struct{}) *sync.WaitGroup {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if got := listed(t, p); len(got) != 1 {
					t.Errorf("warm listing %v during the flood", got)
					return
				}
			}
		}()
		return &wg
	}

	n := len(reg.AccessLog())
	stop := make(chan struct{})
	wg := warmUntil(stop)
	valid := distributionEnvelope(reg.Host, "p/test/hello")
	refused := flood(t, u, "Bearer not-the-secret-0123456789", time.Second, http.StatusUnauthorized, func(int, int) []byte { return valid })
	close(stop)
	wg.Wait()
	if reads := notifiedRegistryReads(reg, n); len(reads) != 0 || p.notifications.receiver.Batches() != 0 {
		t.Errorf("%d refused notifications: %d batches, registry reads %v", refused, p.notifications.receiver.Batches(), reads)
	}

	n = len(reg.AccessLog())
	stop = make(chan struct{})
	wg = warmUntil(stop)
	made := flood(t, u, "Bearer "+notifySecret, 2*time.Second, http.StatusAccepted, func(sender, round int) []byte {
		repos := make([]string, 1000)
		for i := range repos {
			repos[i] = fmt.Sprintf("p/fake%d-%d/r%d", sender, round, i)
		}
		return distributionEnvelope(reg.Host, repos...)
	})
	close(stop)
	wg.Wait()
	reads := notifiedRegistryReads(reg, n)
	t.Logf("%d refused notifications in 1 s; %d of 1,000 made-up repositories each in 2 s: %d batches, %d registry reads of the warm repository",
		refused, made, p.notifications.receiver.Batches(), len(reads))
	if len(reads) > 3 { // its tag list, version index and version, once
		t.Errorf("the flood of made-up repositories read the warm repository %d times:\n%s", len(reads), strings.Join(reads, "\n"))
	}
}

// A notification naming repositories longer than OCI names keep to (255
// characters) does not match them against the templates, whose cost
// grows with the square of a name's length, nor keep them pending: 200
// names of 4,000 characters were matched and invalidated.
func TestLongRepositoryNamesAreNotMatched(t *testing.T) {
	reg := testenv.StartRegistry(t)
	p, u := notifiedProxy(t, reg, nil)
	repos := make([]string, 200)
	for i := range repos {
		repos[i] = fmt.Sprintf("p/%s%d/x", strings.Repeat("a-", 2000), i)
	}
	st, body := notifyPost(t, u, "Bearer "+notifySecret, distributionType, distributionEnvelope(reg.Host, repos...))
	if st != http.StatusAccepted || !strings.Contains(body, `"repositories":0`) {
		t.Errorf("200 names of 4,000 characters: %d %s, want 202, none", st, body)
	}
	if b := p.notifications.receiver.Batches(); b != 0 {
		t.Errorf("%d batches (%s)", b, body)
	}
}
