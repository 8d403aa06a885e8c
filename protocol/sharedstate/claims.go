package sharedstate

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Claims are a fleet's claims on units of work named by a scope and an
// ID (webhook deliveries: a subscription and an event ID), so that one
// replica does each: the first to Take one holds a lease on it (SET NX
// PX), renewed while it works and marked done at the end; the others
// are told it is held (ask again later) or done (skip it). A claim
// taken with an entry keeps it in the scope's outbox until done: when
// the holder stops renewing without ending (it was killed), Recover
// hands the entry to another replica. Every key expires; the outbox of
// a scope holds at most ClaimOptions.MaxEntries entries.
//
// Keys, after the store's prefix: NAME:claim:SCOPE:ID (a holder's
// random token, or "done"), NAME:outbox:SCOPE (a sorted set of IDs by
// when to look at them again), NAME:entry:SCOPE:ID (the entry). Scopes
// and IDs outside [A-Za-z0-9._-]{1,64} are hashed.
type Claims struct {
	r    *Redis
	name string
	o    ClaimOptions
}

// ClaimOptions tune Claims; zero values are the defaults.
type ClaimOptions struct {
	// Lease is how long a claim lasts unrenewed (DefaultClaimLease): a
	// holder renews it every third of it; a killed holder's work is
	// taken over after it.
	Lease time.Duration
	// Memory is how long a done claim is remembered (DefaultClaimMemory):
	// a replica asking later does the work again.
	Memory time.Duration
	// Keep is how long an entry is kept for recovery (DefaultClaimKeep).
	Keep time.Duration
	// MaxEntries bounds a scope's outbox (DefaultClaimEntries): beyond
	// it, the entries looked at soonest are dropped.
	MaxEntries int
}

// Claims' defaults.
const (
	DefaultClaimLease   = 15 * time.Second
	DefaultClaimMemory  = 24 * time.Hour
	DefaultClaimKeep    = time.Hour
	DefaultClaimEntries = 10000
)

// MaxClaimEntry bounds an entry: Take keeps none larger (the claim
// still holds), and Recover reads none larger.
const MaxClaimEntry = 16 << 10

// maxRecoverBatch bounds the entries one Recover returns, so that its
// reply stays within the connection's bounds (resp.go).
const maxRecoverBatch = 64

// ClaimState is what Take found.
type ClaimState int

// What Take found.
const (
	ClaimHeld  ClaimState = iota // another holder has it now: ask again later
	ClaimTaken                   // this caller holds it (a ClaimHold)
	ClaimDone                    // done already: skip it
)

// Claims are the claims named name (a key part: "events").
func (r *Redis) Claims(name string, o ClaimOptions) *Claims {
	if o.Lease <= 0 {
		o.Lease = DefaultClaimLease
	}
	if o.Memory <= 0 {
		o.Memory = DefaultClaimMemory
	}
	if o.Keep <= 0 {
		o.Keep = DefaultClaimKeep
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultClaimEntries
	}
	return &Claims{r: r, name: r.opts.Prefix + name, o: o}
}

// keyPart is s when it is a plain key part, else 32 hex digits of its
// SHA-256 (a key stays short and free of separators).
func keyPart(s string) string {
	ok := len(s) > 0 && len(s) <= 64
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if ok {
		return s
	}
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

// claimKeys are a claim's keys: the claim, the scope's outbox, the
// entry; and the prefixes of the scope's claims and entries.
type claimKeys struct {
	claim, outbox, entry     string
	claimPrefix, entryPrefix string
	member                   string
}

func (c *Claims) keys(scope, id string) claimKeys {
	s := keyPart(scope)
	k := claimKeys{claimPrefix: c.name + ":claim:" + s + ":", entryPrefix: c.name + ":entry:" + s + ":", outbox: c.name + ":outbox:" + s}
	if id != "" {
		k.member = keyPart(id)
		k.claim, k.entry = k.claimPrefix+k.member, k.entryPrefix+k.member
	}
	return k
}

// redisNow is a script's first lines: now, in ms, on the server's clock
// (the replicas' clocks may differ).
const redisNow = `local t = redis.call("time")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`

// takeScript takes a claim: 1 taken (its entry, if any, kept in the
// outbox, looked at again after the lease), 2 done, 0 held. KEYS: the
// claim, the outbox, the entry; ARGV: token, lease (ms), entry ("" for
// none), keep (ms), outbox bound, member, entries' prefix.
var takeScript = redis.NewScript(3, redisNow+`
if not redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  if redis.call("get", KEYS[1]) == "done" then return 2 end
  return 0
end
if ARGV[3] ~= "" then
  redis.call("set", KEYS[3], ARGV[3], "PX", ARGV[4])
  redis.call("zadd", KEYS[2], now + tonumber(ARGV[2]), ARGV[6])
  redis.call("pexpire", KEYS[2], ARGV[4])
  local over = redis.call("zcard", KEYS[2]) - tonumber(ARGV[5])
  if over > 0 then
    for _, m in ipairs(redis.call("zrange", KEYS[2], 0, over - 1)) do redis.call("del", ARGV[7] .. m) end
    redis.call("zremrangebyrank", KEYS[2], 0, over - 1)
  end
end
return 1`)

// doneScript marks a claim done and forgets its entry. KEYS: the
// claim, the outbox, the entry; ARGV: memory (ms), member.
var doneScript = redis.NewScript(3, `
redis.call("set", KEYS[1], "done", "PX", ARGV[1])
redis.call("zrem", KEYS[2], ARGV[2])
redis.call("del", KEYS[3])
return 1`)

// abandonScript gives a claim up while it is still the holder's, its
// entry (if any) to be recovered at once. KEYS: the claim, the outbox;
// ARGV: token, member.
var abandonScript = redis.NewScript(2, `
if redis.call("get", KEYS[1]) ~= ARGV[1] then return 0 end
redis.call("del", KEYS[1])
redis.call("zadd", KEYS[2], "XX", 0, ARGV[2])
return 1`)

// recoverScript returns the entries of the outbox due to be looked at
// whose claim is neither held nor done, each then looked at again after
// a lease (so one replica recovers it); done ones and gone or oversized
// entries leave the outbox, held ones are looked at when their lease
// would end. KEYS: the outbox; ARGV: claims' prefix, entries' prefix,
// lease (ms), batch bound, entry bound.
var recoverScript = redis.NewScript(1, redisNow+`
local out = {}
for _, id in ipairs(redis.call("zrangebyscore", KEYS[1], "-inf", now, "limit", 0, tonumber(ARGV[4]))) do
  local claim = redis.call("get", ARGV[1] .. id)
  local n = redis.call("strlen", ARGV[2] .. id)
  if claim == "done" or (not claim and (n == 0 or n > tonumber(ARGV[5]))) then
    redis.call("zrem", KEYS[1], id)
    redis.call("del", ARGV[2] .. id)
  elseif claim then
    redis.call("zadd", KEYS[1], now + math.max(redis.call("pttl", ARGV[1] .. id), 1), id)
  else
    redis.call("zadd", KEYS[1], now + tonumber(ARGV[3]), id)
    table.insert(out, redis.call("get", ARGV[2] .. id))
  end
end
return out`)

// Take claims (scope, id) for this caller: ClaimTaken with a hold
// renewed until its Done or Abandon, or what holds it. entry (at most
// MaxClaimEntry bytes, else not kept; nil for none) is what Recover
// gives another replica should the hold end unended.
func (c *Claims) Take(ctx context.Context, scope, id string, entry []byte) (*ClaimHold, ClaimState, error) {
	if len(entry) > MaxClaimEntry {
		entry = nil
	}
	tok := make([]byte, 16)
	rand.Read(tok)
	h := &ClaimHold{c: c, k: c.keys(scope, id), token: hex.EncodeToString(tok), stop: make(chan struct{})}
	var state int64
	err := c.r.do(ctx, "claim", func(ctx context.Context, conn redis.Conn) error {
		var err error
		state, err = redis.Int64(takeScript.DoContext(ctx, conn, h.k.claim, h.k.outbox, h.k.entry,
			h.token, c.o.Lease.Milliseconds(), entry, c.o.Keep.Milliseconds(), c.o.MaxEntries, h.k.member, h.k.entryPrefix))
		return err
	})
	switch {
	case err != nil:
		return nil, ClaimHeld, err
	case state == 2:
		return nil, ClaimDone, nil
	case state != 1:
		return nil, ClaimHeld, nil
	}
	c.r.wg.Add(1)
	go h.renew()
	return h, ClaimTaken, nil
}

// Recover is at most limit (and at most 64) entries of scope's outbox
// whose claims ended unended (their holders stopped renewing, or
// abandoned them), each given to this caller only for a lease: the
// caller takes their claims to do them (Take). What Redis answers is
// checked against the bounds again.
func (c *Claims) Recover(ctx context.Context, scope string, limit int) ([][]byte, error) {
	limit = min(limit, maxRecoverBatch)
	if limit <= 0 {
		return nil, nil
	}
	k := c.keys(scope, "")
	var entries [][]byte
	err := c.r.do(ctx, "recover", func(ctx context.Context, conn redis.Conn) error {
		var err error
		entries, err = redis.ByteSlices(recoverScript.DoContext(ctx, conn, k.outbox, k.claimPrefix, k.entryPrefix,
			c.o.Lease.Milliseconds(), limit, MaxClaimEntry))
		return err
	})
	if errors.Is(err, redis.ErrNil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(entries) > limit {
		entries = entries[:limit]
	}
	out := entries[:0]
	for _, e := range entries {
		if len(e) > 0 && len(e) <= MaxClaimEntry {
			out = append(out, e)
		}
	}
	return out, nil
}

// ClaimHold is a claim taken: renewed every third of the lease until
// Done or Abandon, or until found lost (expired: another replica may
// then do the work too).
type ClaimHold struct {
	c     *Claims
	k     claimKeys
	token string
	once  sync.Once
	stop  chan struct{}
}

func (h *ClaimHold) renew() {
	defer h.c.r.wg.Done()
	t := time.NewTicker(h.c.o.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-h.c.r.closed:
			return
		case <-t.C:
		}
		var n int64
		err := h.c.r.do(context.Background(), "renew", func(ctx context.Context, conn redis.Conn) error {
			var err error
			n, err = redis.Int64(renewScript.DoContext(ctx, conn, h.k.claim, h.token, h.c.o.Lease.Milliseconds()))
			return err
		})
		if err == nil && n == 0 {
			h.c.r.opts.Logger.Warn("shared cache: a claim's lease was lost (it expired): another replica may do its work too")
			return
		}
	}
}

// Done marks the claim done (remembered for ClaimOptions.Memory) and
// forgets its entry, whoever holds it now: the work was done.
func (h *ClaimHold) Done(ctx context.Context) {
	h.end(ctx, "done", func(ctx context.Context, conn redis.Conn) error {
		_, err := doneScript.DoContext(ctx, conn, h.k.claim, h.k.outbox, h.k.entry, h.c.o.Memory.Milliseconds(), h.k.member)
		return err
	})
}

// Abandon gives the claim up undone if it is still this holder's: its
// entry, if kept, is recovered at once by the next Recover.
func (h *ClaimHold) Abandon(ctx context.Context) {
	h.end(ctx, "release", func(ctx context.Context, conn redis.Conn) error {
		_, err := abandonScript.DoContext(ctx, conn, h.k.claim, h.k.outbox, h.token, h.k.member)
		return err
	})
}

// end stops renewing and runs the ending operation, once.
func (h *ClaimHold) end(ctx context.Context, op string, fn func(ctx context.Context, conn redis.Conn) error) {
	h.once.Do(func() {
		close(h.stop)
		if err := h.c.r.do(ctx, op, fn); err != nil {
			h.c.r.opts.Logger.Debug("shared cache: a claim's end was not recorded: it expires with its lease", "op", op, "error", err.Error())
		}
	})
}
