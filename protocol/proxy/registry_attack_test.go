package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/logins"
)

// Made-up user names fill the proxy's memory of who guesses at whom
// (cheaply: a limited guess reaches no registry). A user guessed at
// from that address afterwards must still be screened: her known
// credential's quick yes would otherwise tell a right guess from a
// wrong one at the speed of requests.
func TestGuessingIsScreenedWhenTheGuessMemoryIsFull(t *testing.T) {
	const maxEntries = 40
	reg := teamRegistry(t)
	pushTo(t, reg, "providers/team-a/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	p := registryDecidesProxy(t, reg, Options{
		RegistryLogins: logins.Limits{Cooldown: time.Minute, MaxEntries: maxEntries},
	})
	get := func(token string) int {
		return p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/index.json", bearer(token)).Status
	}
	if code := get("alice:alice-Pa55"); code != 200 {
		t.Fatalf("alice: %d", code)
	}
	for i := range 2 * maxEntries {
		get(fmt.Sprintf("made-up-%d:x", i))
	}
	for i := range 5 {
		if code := get(fmt.Sprintf("alice:guess-%d", i)); code == 200 {
			t.Fatalf("a wrong guess: 200")
		}
	}
	if code := get("alice:alice-Pa55"); code == 200 {
		t.Error("the right guess, after five wrong ones from the same address with the guess memory full: 200")
	}
}

// A registry that lets anyone read (no authentication, or a public
// repository) never asks for the credential a token carries: the proxy
// must not record the name that token claims as a user the registry
// accepted.
func TestRegistryNeverAskedLeavesTheNameUnverified(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushTo(t, reg, "providers/team-a/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	trail, path := openTrail(t)
	p := registryDecidesProxy(t, reg, Options{
		Audit:          trail,
		AuditDocuments: true,
	})
	if r := p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/index.json", bearer("the-ceo:made-up")); r.Status != 200 {
		t.Fatalf("index.json: %d %s", r.Status, r.Body)
	}
	n := 0
	for _, ev := range readAudit(t, trail, path) {
		if ev.Client == "the-ceo" {
			n++
			if ev.Identity != audit.IdentityRegistryUnverified {
				t.Errorf("a name the registry never checked recorded as identity %q", ev.Identity)
			}
		}
	}
	if n == 0 {
		t.Fatal("no event names the caller")
	}
}

// A user name cools down whatever its letters' case: registries whose
// user names are case-insensitive (GitHub's, for one) take ALICE's
// password as alice's, so the case of the name must not buy a guess a
// login during alice's cool-down.
func TestCoolDownWhateverTheCaseOfTheName(t *testing.T) {
	reg := teamRegistry(t)
	pushTo(t, reg, "providers/team-a/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	p := registryDecidesProxy(t, reg, Options{
		RegistryLogins: logins.Limits{Cooldown: time.Minute},
	})
	for _, user := range []string{"alice", "Alice", "ALICE", "aLiCe", "alicE"} {
		if r := p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/index.json", bearer(user+":guess")); r.Status == 200 {
			t.Fatalf("%s's guess: 200", user)
		}
	}
	n := 0
	for _, r := range reg.Token.Requests() {
		if strings.EqualFold(r.User, "alice") && !r.Granted {
			n++
		}
	}
	if n != 1 {
		t.Errorf("5 guesses at alice, her name's case varied, made %d failed registry logins, want 1", n)
	}
}

// A credential the registry accepted (any account, where anyone may
// open one) asking for many addresses, each a repository of its own,
// makes a registry login each: those are bounded per credential too, so
// that one account cannot have the proxy's address throttled or locked
// out by the registry.
func TestKnownCredentialLoginsAreBounded(t *testing.T) {
	reg := teamRegistry(t)
	pushTo(t, reg, "providers/team-a/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	p := registryDecidesProxy(t, reg, Options{
		RegistryLogins: logins.Limits{KnownRate: 0.5, KnownBurst: 20},
	})
	if r := p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/index.json", bearer("alice:alice-Pa55")); r.Status != 200 {
		t.Fatalf("alice: %d %s", r.Status, r.Body)
	}
	statuses := map[int]int{}
	start := time.Now()
	for i := range 100 {
		statuses[p.do(t, http.MethodGet, fmt.Sprintf("/v1/mirror/example.com/team-a/p%d/index.json", i), bearer("alice:alice-Pa55")).Status]++
	}
	n := 0
	for _, r := range reg.Token.Requests() {
		if r.User == "alice" {
			n++
		}
	}
	// The burst, the refill while asking (a loaded machine), alice's first.
	if most := 22 + int(time.Since(start).Seconds()/2); n > most {
		t.Errorf("100 addresses asked for with a known credential made %d registry logins, want at most %d (answers %v)", n, most, statuses)
	}
	if statuses[http.StatusTooManyRequests] == 0 {
		t.Errorf("answers %v, want 429s past the bound", statuses)
	}
}

// The signed URLs of a document answered to a name the registry never
// verified carry no ticket naming it: an archive downloaded through
// them must not be recorded as handed to that name, which would drop
// the mark that it is only a token's claim.
func TestNoTicketForAnUnverifiedName(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushTo(t, reg, "providers/team-a/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	trail, path := openTrail(t)
	p := registryDecidesProxy(t, reg, Options{
		Audit: trail,
	})
	r := p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/1.0.0.json",
		map[string]string{"Authorization": "Bearer the-ceo:made-up", "User-Agent": forgingAgent})
	var doc struct {
		Archives map[string]struct{ URL string } `json:"archives"`
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil || r.Status != 200 || len(doc.Archives) == 0 {
		t.Fatalf("document: %d %s", r.Status, r.Body)
	}
	for _, a := range doc.Archives {
		if got := p.do(t, http.MethodGet, resolve(t, r.URL, a.URL), nil); got.Status != 200 {
			t.Fatalf("archive: %d %s", got.Status, got.Body)
		}
		break
	}
	for _, ev := range readAudit(t, trail, path) {
		if ev.Client == "the-ceo" && ev.Identity != audit.IdentityRegistryUnverified {
			t.Errorf("%s %s names the-ceo as identity %q", ev.Event, ev.Outcome, ev.Identity)
		}
	}
}

// Guesses at one user from many addresses at once (an IPv6 /48 holds
// 65,536 /64s) reach the registry once, not once per address: a login
// of the user already in flight counts as the cool-down its refusal
// would start.
func TestGuessesAtOnceFromManyAddresses(t *testing.T) {
	reg := teamRegistry(t)
	pushTo(t, reg, "providers/team-a/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	pushTo(t, reg, "providers/team-b/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	p := registryDecidesProxy(t, reg, Options{
		RegistryLogins: logins.Limits{Burst: 200}, // the proxy's bound is not what is tested
	})
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 40 {
		via := p.clientFrom(t, fmt.Sprintf("127.0.0.%d", 10+i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			via.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/index.json", bearer(fmt.Sprintf("alice:guess-%d", i)))
		}()
	}
	close(start)
	wg.Wait()
	if n := failedLogins(reg, "alice"); n > 2 {
		t.Errorf("40 guesses at once from 40 addresses made %d failed registry logins, want 1 or 2", n)
	}
	// One right credential from many jobs at once (a CI fleet's robot
	// account, cold) logs in from each.
	var ok atomic.Int64
	for i := range 10 {
		via := p.clientFrom(t, fmt.Sprintf("127.0.1.%d", 10+i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if via.do(t, http.MethodGet, "/v1/mirror/example.com/team-b/hello/index.json", bearer("bob:bob-Pa55")).Status == 200 {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 10 {
		t.Errorf("bob's right credential from 10 jobs at once: %d answered 200, want 10", ok.Load())
	}
}
