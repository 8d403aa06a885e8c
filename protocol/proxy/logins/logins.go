// Package logins bounds the registry logins a proxy makes for clients
// when the registry decides who reads what (proxy.Options.RegistryDecides;
// docs/proxy.md, "The registry decides"): every confirmation the
// registry is asked for is a login with the caller's credential, so that the proxy is no faster an oracle
// for passwords than the registry, and no way to lock accounts or the
// proxy's address out of the registry:
//
//   - A credential the registry accepted (it listed a repository to it,
//     or answered about one) is known for acceptedFor, and its logins are
//     bounded by its own limit only (KnownRate): a client whose credential
//     works is never slowed by someone else's guessing, and one account
//     asking about many repositories does not get the proxy's address
//     throttled.
//   - Any other credential's logins are bounded per remote address
//     (the TCP peer; an IPv6 /64) and for the whole proxy: past either,
//     429 with Retry-After, whatever the password.
//   - A login the registry refuses (ErrCredentialsRefused: a wrong user
//     name or password) cools the user name down: for Cooldown, every
//     credential of that user that is not known gets the 404 a wrong
//     password gets, without asking the registry, whatever password it
//     carries.
//   - An address more than guessesTolerated of whose unknown credentials
//     of a user were not accepted (refused, cooled down, limited), each
//     within Cooldown of the last, is guessing at that user: every
//     credential of that user from there, known ones too, gets the same
//     answer as a guess (screen) until Cooldown after the last guess, so
//     that a known credential's quick yes tells no guess right from
//     wrong. The user's known credentials from elsewhere keep working.
//     An address whose guesses there is no room to remember (floods)
//     is taken as guessing at every user.
//
// Every unknown credential spends the bounds, refused during a
// cool-down or not, so guesses are answered no faster than the bounds
// allow: a few truthful answers per address and user, then none until
// the guessing stops for a cool-down.
package logins

import (
	"crypto/sha256"
	"errors"
	"maps"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// Limits bound the registry logins (zero values: the defaults below).
type Limits struct {
	// Rate and Burst bound the logins of credentials the registry has not
	// accepted, for the whole proxy (logins per second).
	Rate  float64
	Burst int
	// PerAddressRate and PerAddressBurst bound them per remote address.
	PerAddressRate  float64
	PerAddressBurst int
	// KnownRate and KnownBurst bound the logins of each credential the
	// registry accepted (logins per second): one account asking about
	// many repositories.
	KnownRate  float64
	KnownBurst int
	// Cooldown is how long a user name whose login the registry refused
	// gets the refusal without the registry being asked.
	Cooldown time.Duration
	// MaxEntries bounds each of the maps a Guard keeps (known
	// credentials, cooling users, guesses, addresses).
	MaxEntries int
}

// The defaults of Limits.
const (
	defaultLoginRate        = 10
	defaultLoginBurst       = 50
	defaultAddressLoginRate = 1
	DefaultAddressBurst     = 10 // PerAddressBurst
	defaultLoginCooldown    = 30 * time.Second
	defaultKnownLoginRate   = 10
	defaultKnownLoginBurst  = 100
	acceptedFor             = time.Hour
)

const defaultMaxEntries = 100000

// withDefaults is l with its zero values replaced by the defaults.
func (l Limits) withDefaults() Limits {
	if l.Rate <= 0 {
		l.Rate = defaultLoginRate
	}
	if l.Burst <= 0 {
		l.Burst = defaultLoginBurst
	}
	if l.PerAddressRate <= 0 {
		l.PerAddressRate = defaultAddressLoginRate
	}
	if l.PerAddressBurst <= 0 {
		l.PerAddressBurst = DefaultAddressBurst
	}
	if l.KnownRate <= 0 {
		l.KnownRate = defaultKnownLoginRate
	}
	if l.KnownBurst <= 0 {
		l.KnownBurst = defaultKnownLoginBurst
	}
	if l.Cooldown <= 0 {
		l.Cooldown = defaultLoginCooldown
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = defaultMaxEntries
	}
	return l
}

// Login is a client's credential as the bounds know it.
type Login struct {
	User string
	Key  [sha256.Size]byte // the token's sha256
	From string            // the remote address (RemoteAddress)
}

// ErrCoolingDown is a login not asked: the user's last one was refused.
var ErrCoolingDown = errors.New("the user's last registry login was refused: not asked again yet")

// Guard is the bounds and what they remember: one a proxy.
type Guard struct {
	limits Limits
	global *rate.Limiter
	mu     sync.Mutex
	known  map[[sha256.Size]byte]time.Time // accepted credentials, until
	cool   map[string]time.Time            // user (userKey) → cooling down until
	guess  map[guessKey]guesses            // a user guessed at from an address
	floods map[string]time.Time            // addresses guessing beyond what guess can hold, until
	addrs  *limiters[string]               // remote address → its bound
	flying map[string]flight               // user (userKey) → an unknown credential's logins in flight
	creds  *limiters[[sha256.Size]byte]    // a known credential → its bound
	swept  time.Time                       // when the full guess map was last walked
	sweeps int                             // its walks (tests)
}

// sweepEvery is how often, at most, a full guess map is walked for its
// expired entries.
const sweepEvery = time.Second

// New is a Guard of the limits l.
func New(l Limits) *Guard {
	l = l.withDefaults()
	return &Guard{limits: l, global: rate.NewLimiter(rate.Limit(l.Rate), l.Burst),
		known: map[[sha256.Size]byte]time.Time{}, cool: map[string]time.Time{}, guess: map[guessKey]guesses{}, floods: map[string]time.Time{}, flying: map[string]flight{},
		addrs: newLimiters[string](l.PerAddressRate, l.PerAddressBurst, l.MaxEntries), creds: newLimiters[[sha256.Size]byte](l.KnownRate, l.KnownBurst, l.MaxEntries)}
}

// Accepted reports whether the registry accepted the credential whose
// token hashes to key within acceptedFor.
func (g *Guard) Accepted(key [sha256.Size]byte) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Now().Before(g.known[key])
}

// userKey is the user name cool-downs and guesses are kept by: in
// lower case, as registries whose user names are case-insensitive
// (GitHub's) take ALICE's password as alice's; a registry telling them
// apart only has both cool down together.
func userKey(user string) string {
	return strings.ToLower(user)
}

// guessKey is a user name guessed at from a remote address.
type guessKey struct{ user, from string }

// guesses are how many unknown credentials of a user from an address
// were not accepted, the last until the cool-down after it ends.
type guesses struct {
	n     int
	until time.Time
}

// guessesTolerated are the guesses an address makes at a user before
// the user's known credentials from there get a guess's answer too: a
// mistyped password or two does not lock a user's working credential
// out.
const guessesTolerated = 2

// Screen is nil when id may be confirmed as usual; while id's address
// is guessing at id's user (more than guessesTolerated unknown
// credentials of that user from there were not accepted, each within
// the cool-down of the last), every credential of that user from there,
// known or not, spends the bounds and gets the cool-down's answer
// (ErrCoolingDown, or a 429), so that no guess is told right from wrong
// by a known credential's quick yes; each unknown one is a guess more.
func (g *Guard) Screen(id Login) error {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.guessingAt(id, now) {
		return nil
	}
	if !now.Before(g.known[id.Key]) {
		g.guessing(id, now) // still guessing: the cool-down starts again
	}
	if !g.spend(id.From) {
		return g.limited()
	}
	return ErrCoolingDown
}

// guessingAt reports whether id's address is guessing at id's user: it
// made more than guessesTolerated guesses at the user, or guesses the
// proxy had no room to remember (floods), each within the cool-down of
// the last (g.mu held).
func (g *Guard) guessingAt(id Login, now time.Time) bool {
	if gs := g.guess[guessKey{userKey(id.User), id.From}]; gs.n > guessesTolerated && now.Before(gs.until) {
		return true
	}
	return now.Before(g.floods[id.From])
}

// Permit is nil when id's credential may be sent to the registry now;
// ErrCoolingDown, or a 429 (respond.Limited), when not: then id's
// address is guessing at its user.
func (g *Guard) Permit(id Login) error {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Before(g.known[id.Key]) {
		if !g.creds.of(id.Key, now).Allow() {
			return respond.Limited(g.knownRetryAfter(), "too many registry logins with this credential: retry after %d s", g.knownRetryAfter())
		}
		return nil
	}
	// Spent first, cool-down or not: a guess costs the same either way.
	switch {
	case !g.spend(id.From):
		g.guessing(id, now)
		return g.limited()
	case now.Before(g.cool[userKey(id.User)]), g.flyingOther(id):
		g.guessing(id, now)
		return ErrCoolingDown
	}
	g.fly(id)
	return nil
}

// flight is the login of an unknown credential of a user in flight: the
// credential and how many of its logins are (Guard.flying).
type flight struct {
	key [sha256.Size]byte
	n   int
}

// flyingOther reports whether another credential of id's user is
// logging in: its refusal would cool the user down, so id is answered
// as during a cool-down, and guesses at once from many addresses reach
// the registry once (g.mu held).
func (g *Guard) flyingOther(id Login) bool {
	f, ok := g.flying[userKey(id.User)]
	return ok && f.key != id.Key
}

// fly notes id's login in flight until landed (g.mu held).
func (g *Guard) fly(id Login) {
	u := userKey(id.User)
	f := g.flying[u]
	g.flying[u] = flight{key: id.Key, n: f.n + 1}
}

// Landed notes that a login of id that Permit let through has been
// answered (or given up): a no-op for a known credential's.
func (g *Guard) Landed(id Login) {
	g.mu.Lock()
	defer g.mu.Unlock()
	u := userKey(id.User)
	switch f, ok := g.flying[u]; {
	case !ok || f.key != id.Key:
	case f.n <= 1:
		delete(g.flying, u)
	default:
		g.flying[u] = flight{key: f.key, n: f.n - 1}
	}
}

// spend takes a login from the bounds of address from and the whole
// proxy's; false when either is spent (g.mu held).
func (g *Guard) spend(from string) bool {
	return g.addressLimiter(from).Allow() && g.global.Allow()
}

// guessing notes that id's address guesses at id's user (g.mu held).
func (g *Guard) guessing(id Login, now time.Time) {
	k := guessKey{userKey(id.User), id.From}
	gs := g.guess[k]
	if !now.Before(gs.until) {
		gs.n = 0
	}
	if len(g.guess) >= g.limits.MaxEntries && now.Sub(g.swept) >= sweepEvery {
		// At most every sweepEvery: a full memory is otherwise walked
		// for each guess, under the lock every login takes.
		g.swept = now
		g.sweeps++
		maps.DeleteFunc(g.guess, func(_ guessKey, v guesses) bool { return now.After(v.until) })
	}
	if len(g.guess) < g.limits.MaxEntries || gs.n > 0 {
		g.guess[k] = guesses{n: gs.n + 1, until: now.Add(g.limits.Cooldown)}
		return
	}
	// No room to remember whom the address guesses at (made-up user
	// names filled the memory): it is taken as guessing at every user.
	makeRoom(g.floods, now, g.limits.MaxEntries)
	g.floods[id.From] = now.Add(g.limits.Cooldown)
}

// limited is the 429 of a login over the bounds.
func (g *Guard) limited() error {
	return respond.Limited(g.retryAfter(), "too many registry logins with credentials the registry has not accepted yet: retry after %d s", g.retryAfter())
}

// Learn keeps what the registry's answer err to id's login says: a
// credential it refused cools its user down and is known no more; one
// it took (asked for it and accepted it) and answered about a
// repository with is known. A registry that never asked for the
// credential (anyone reads there) verified nobody.
func (g *Guard) Learn(id Login, took bool, err error) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case errors.Is(err, oci.ErrCredentialsRefused):
		delete(g.known, id.Key)
		makeRoom(g.cool, now, g.limits.MaxEntries)
		g.cool[userKey(id.User)] = now.Add(g.limits.Cooldown)
		g.guessing(id, now)
	case took && (err == nil || AnsweredAbout(err)):
		makeRoom(g.known, now, g.limits.MaxEntries)
		g.known[id.Key] = now.Add(acceptedFor)
	}
}

// AnsweredAbout reports whether a CanRead error is the registry's answer
// about a repository (it took the credential).
func AnsweredAbout(err error) bool {
	switch oci.Classify(err) {
	case oci.FailureUnauthorized, oci.FailureDenied, oci.FailureNotFound:
		return true
	}
	return false
}

// addressLimiter is the bound of the remote address from (g.mu held).
func (g *Guard) addressLimiter(from string) *rate.Limiter {
	return g.addrs.of(from, time.Now())
}

// limiters are a limiter each for at most max keys, and one
// the keys beyond share (others).
type limiters[K comparable] struct {
	m      map[K]*rate.Limiter
	others *rate.Limiter
	max    int
	swept  time.Time // when m, full, was last walked
	sweeps int       // its walks (tests)
}

func newLimiters[K comparable](r float64, burst, bound int) *limiters[K] {
	return &limiters[K]{m: map[K]*rate.Limiter{}, others: rate.NewLimiter(rate.Limit(r), burst), max: bound}
}

// of is k's limiter, made like others when there is none; others
// itself when the map is full of limiters in use. A full map is walked
// for full limiters (as good as new ones: dropped) at most every
// sweepEvery, not for each new key.
func (l *limiters[K]) of(k K, now time.Time) *rate.Limiter {
	if lim, ok := l.m[k]; ok {
		return lim
	}
	if len(l.m) >= l.max && now.Sub(l.swept) >= sweepEvery {
		l.swept = now
		l.sweeps++
		maps.DeleteFunc(l.m, func(_ K, lim *rate.Limiter) bool { return lim.Tokens() >= float64(lim.Burst()) })
	}
	if len(l.m) >= l.max {
		return l.others
	}
	lim := rate.NewLimiter(l.others.Limit(), l.others.Burst())
	l.m[k] = lim
	return lim
}

// retryAfter is the seconds until a remote address may log in again.
func (g *Guard) retryAfter() int {
	return int(math.Ceil(1 / min(g.limits.Rate, g.limits.PerAddressRate)))
}

// knownRetryAfter is the seconds until a known credential may log in
// again.
func (g *Guard) knownRetryAfter() int {
	return int(math.Ceil(1 / g.limits.KnownRate))
}

// makeRoom drops the expired entries of m when it holds bound, then
// others until a tenth of bound is free.
func makeRoom[K comparable](m map[K]time.Time, now time.Time, bound int) {
	if len(m) < bound {
		return
	}
	maps.DeleteFunc(m, func(_ K, until time.Time) bool { return now.After(until) })
	for k := range m {
		if len(m) < bound*9/10 {
			return
		}
		delete(m, k)
	}
}

// RemoteAddress is what logins are bounded by for a request from
// remote (host:port): the IP, an IPv6 address's /64.
func RemoteAddress(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	switch {
	case ip == nil:
		return host
	case ip.To4() != nil:
		return ip.To4().String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
