package logins

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Logins are bounded per IPv4 address and per IPv6 /64 (one host's
// usual allocation), whatever the port.
func TestRemoteAddressOfLogins(t *testing.T) {
	for remote, want := range map[string]string{
		"192.0.2.7:443":                "192.0.2.7",
		"192.0.2.7:50000":              "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443":   "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:50000": "2001:db8:1:2::/64",
		"[::ffff:192.0.2.7]:443":       "192.0.2.7",
		"not an address":               "not an address",
		"[2001:db8:1:3:3:4:5:6]:443":   "2001:db8:1:3::/64",
	} {
		if got := RemoteAddress(remote); got != want {
			t.Errorf("RemoteAddress(%q) = %q, want %q", remote, got, want)
		}
	}
}

// login is what a proxy does with one request's credential: screen it,
// and when permitted, log in (the registry refuses every password here)
// and land.
func login(g *Guard, user, from string) {
	l := Login{User: user, Key: sha256.Sum256([]byte(user + ":x")), From: from}
	if g.Screen(l) != nil || g.Permit(l) != nil {
		return
	}
	g.Learn(l, true, fmt.Errorf("the registry says: %w", oci.ErrCredentialsRefused))
	g.Landed(l)
}

// Guesses with made-up user names while the guess memory is full cost
// one sweep of it now and then, not one per guess: each guess would
// otherwise walk every entry under the lock every login takes.
func TestAFullGuessMemoryIsNotSweptPerGuess(t *testing.T) {
	const maxEntries = 100
	g := New(Limits{Cooldown: time.Minute, PerAddressRate: 0.001, MaxEntries: maxEntries}) // addresses' limiters stay in use
	start := time.Now()
	for i := range 4 * maxEntries {
		login(g, fmt.Sprintf("made-up-%d", i), "127.0.0.1")
	}
	// The same with addresses: one guess each from 400.
	for i := range 4 * maxEntries {
		login(g, fmt.Sprintf("mallory-%d", i), fmt.Sprintf("127.1.%d.%d", i/200, i%200+1))
	}
	g.mu.Lock()
	sweeps, addrSweeps, guesses, addrs := g.sweeps, g.addrs.sweeps, len(g.guess), len(g.addrs.m)
	g.mu.Unlock()
	if guesses < maxEntries || addrs < maxEntries {
		t.Fatalf("%d guesses and %d addresses remembered: the memory never filled (bound %d)", guesses, addrs, maxEntries)
	}
	// One a second at most (a loaded machine takes longer).
	if most := 2 + int(time.Since(start)/sweepEvery); sweeps > most || addrSweeps > most {
		t.Errorf("%d guesses past a full memory swept it %d times; %d addresses past a full map of their limiters swept it %d times",
			3*maxEntries, sweeps, 3*maxEntries, addrSweeps)
	}
}
