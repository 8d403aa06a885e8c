package notify

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const testSecret = "0123456789abcdef-secret"

// recorded is what Apply was called with.
type recorded struct {
	mu      sync.Mutex
	batches [][]string
	all     int
}

func (r *recorded) apply(names []string, all bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, names)
	if all {
		r.all++
	}
}

func scopeAcme(host, repo string) []string {
	if (host == "" || host == "reg.example") && strings.HasPrefix(repo, "acme/") {
		return []string{"reg.example/" + repo}
	}
	return nil
}

func TestAuthenticationForms(t *testing.T) {
	r, err := New(Options{Secret: []byte(testSecret), Scope: scopeAcme, Apply: func([]string, bool) {}})
	if err != nil {
		t.Fatal(err)
	}
	basic := func(user, pass string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	for h, want := range map[string]bool{
		"Bearer " + testSecret: true, testSecret: true, basic("zot", testSecret): true,
		"": false, "Bearer ": false, "Bearer " + testSecret + " ": false, "bearer " + testSecret: false, basic(testSecret, "x"): false,
		"Basic %%%": false, testSecret[:len(testSecret)-1]: false,
	} {
		if got := r.authenticated(h); got != want {
			t.Errorf("%q: %v, want %v", h, got, want)
		}
	}
	if _, err := New(Options{Secret: []byte("short"), Scope: scopeAcme, Apply: func([]string, bool) {}}); err == nil {
		t.Error("a 5-byte secret was accepted")
	}
}

// A flood of notifications naming many repositories is at most
// MaxPending of them a batch, beyond which the batch drops every
// repository's: memory and work are bounded whatever is sent.
func TestPendingBounded(t *testing.T) {
	rec := &recorded{}
	r, err := New(Options{Secret: []byte(testSecret), Scope: scopeAcme, Apply: rec.apply, MaxPending: 8})
	if err != nil {
		t.Fatal(err)
	}
	var changes []Change
	for i := range 100 {
		changes = append(changes, Change{Repository: fmt.Sprintf("acme/r%d", i)})
	}
	r.accept(changes)
	names, _, all, _ := r.take()
	if !all || len(names) != 0 {
		t.Fatalf("100 repositories over a bound of 8: names %d, all %v; want every repository's dropped", len(names), all)
	}
	r.accept(changes[:3])
	if names, _, all, _ := r.take(); all || len(names) != 3 {
		t.Fatalf("3 repositories: %v all %v", names, all)
	}
}

// Requests arriving concurrently all reach a batch, and the batches are
// fewer than the requests.
func TestConcurrentNotificationsCoalesce(t *testing.T) {
	rec := &recorded{}
	r, err := New(Options{Secret: []byte(testSecret), Scope: scopeAcme, Apply: rec.apply})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.Start(ctx)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"events":[{"action":"push","target":{"repository":"acme/r%d","tag":"1.0.0"},"request":{"host":"reg.example"}}]}`, i%5)
			req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+testSecret)
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			if w.Code != http.StatusAccepted {
				t.Errorf("%d %s", w.Code, w.Body)
			}
		}()
	}
	wg.Wait()
	// Every repository reaches a batch: wait for the last one.
	for {
		rec.mu.Lock()
		seen := map[string]bool{}
		for _, b := range rec.batches {
			for _, n := range b {
				seen[n] = true
			}
		}
		n := len(rec.batches)
		rec.mu.Unlock()
		if len(seen) == 5 {
			if n > 50 {
				t.Fatalf("%d batches for 50 requests", n)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// What another replica publishes is applied here only for repositories
// in this replica's scope; this replica's own messages and garbage are
// ignored.
func TestHeardFromTheFleet(t *testing.T) {
	r, _ := New(Options{Secret: []byte(testSecret), Scope: scopeAcme, Apply: func([]string, bool) {}})
	r.heard([]byte(`{"from":"other","names":["reg.example/acme/a","elsewhere.example/acme/b","reg.example/other/c"]}`))
	r.heard([]byte(`{"from":"` + r.id + `","names":["reg.example/acme/own"]}`))
	r.heard([]byte(`not json`))
	r.heard([]byte(`{"from":"other","names":["nohost"]}`))
	names, tell, all, _ := r.take()
	if len(names) != 1 || names[0] != "reg.example/acme/a" || len(tell) != 0 || all {
		t.Fatalf("heard: names %v tell %v all %v", names, tell, all)
	}
}

func TestMethodsAndLimits(t *testing.T) {
	r, _ := New(Options{Secret: []byte(testSecret), Scope: scopeAcme, Apply: func([]string, bool) {}})
	w := httptest.NewRecorder()
	r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, Path, nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", w.Code)
	}
	req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(`{"events":[`+strings.Repeat(" ", MaxBody)+`]}`))
	req.Header.Set("Authorization", "Bearer "+testSecret)
	w = httptest.NewRecorder()
	r.ServeHTTP(w, req)
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("over 1 MiB: %d", w.Code)
	}
}

// published records what a Receiver tells its fleet.
type published struct {
	mu   sync.Mutex
	msgs [][]byte
}

func (p *published) Publish(_ context.Context, msg []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msgs = append(p.msgs, msg)
	return nil
}

func (p *published) Subscribe(context.Context, func([]byte)) {}

// A batch too long for one fleet message is told in several, each within
// maxMessage and heard by another replica, not as "all" (which made every
// other replica drop every repository's for a batch of a few hundred).
func TestLongBatchToldInSeveralMessages(t *testing.T) {
	fleet := &published{}
	r, _ := New(Options{Secret: []byte(testSecret), Scope: scopeAcme, Apply: func([]string, bool) {}, Fleet: fleet})
	var names []string
	for i := range 1000 {
		names = append(names, fmt.Sprintf("reg.example/acme/%s-%d:1.0.%d", strings.Repeat("x", 40), i, i))
	}
	r.tell(context.Background(), names, false)
	other, _ := New(Options{Secret: []byte(testSecret), Scope: scopeAcme, Apply: func([]string, bool) {}, MaxPending: 2000})
	for _, m := range fleet.msgs {
		if len(m) > maxMessage {
			t.Fatalf("a message of %d bytes", len(m))
		}
		other.heard(m)
	}
	heard, _, all, _ := other.take()
	if all || len(heard) != len(names) {
		t.Fatalf("%d messages: the other replica heard %d names, all %v; want the %d", len(fleet.msgs), len(heard), all, len(names))
	}
	fleet.msgs = nil
	r.tell(context.Background(), nil, true)
	if len(fleet.msgs) != 1 || !strings.Contains(string(fleet.msgs[0]), `"all":true`) {
		t.Errorf("all: %q", fleet.msgs)
	}
}
