// Package sharedstate is the state replicas of `oci-tofu serve` share so
// they act as one proxy: who is pulling a release from its origin (a
// lease), what a finished pull stored and what recently failed (records
// with a lifetime). It owns the Store interface the pull-through engine
// takes, an in-process implementation (Local, a single replica's
// behaviour) and one implementation per shared store (Redis). Nothing read
// from a shared store is trusted for integrity: what a record names is
// read and checked against the registry by digest. A shared store that is
// down or slow costs coordination only: every operation is bounded, a
// circuit breaker stops asking a failing store, and callers carry on on
// their own. See docs/proxy.md, "A fleet: shared state on Redis".
package sharedstate

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Store is the state replicas share.
type Store interface {
	// Lease takes the lease named key for ttl, renewed while held: nil
	// (and no error) when another holder has it. An error means the store
	// could not be asked: the caller carries on on its own.
	Lease(ctx context.Context, key string, ttl time.Duration) (Lease, error)
	// Put records val under key for ttl.
	Put(ctx context.Context, key string, val []byte, ttl time.Duration) error
	// Get reads the record under key; ok is false when there is none.
	Get(ctx context.Context, key string) (val []byte, ok bool, err error)
	// Shared reports whether other processes see this state (false for
	// Local: the caller's own single-flight suffices).
	Shared() bool
	// Close stops the store's connections and renewals.
	Close() error
}

// Lease is a held lease: renewed in the background until Release.
type Lease interface {
	// Release gives the lease up if it is still this holder's (a lease
	// that expired and was taken by another is left alone).
	Release()
}

// ErrUnavailable means the shared store could not be asked (down, slow,
// or the circuit breaker is open).
var ErrUnavailable = errors.New("shared state unavailable")

// maxRecord bounds a record's size, written or read.
const maxRecord = 64 << 10

// Local is the in-process Store: leases and records in memory, seen by
// this process only.
type Local struct {
	mu      sync.Mutex
	records map[string]localRecord
	leases  map[string]*localLease
}

type localRecord struct {
	val   []byte
	until time.Time
}

// NewLocal makes an empty in-process Store.
func NewLocal() *Local {
	return &Local{records: map[string]localRecord{}, leases: map[string]*localLease{}}
}

// Shared is false: only this process sees a Local store.
func (l *Local) Shared() bool { return false }

// Close does nothing.
func (l *Local) Close() error { return nil }

// Lease takes key unless a lease on it is held and unexpired.
func (l *Local) Lease(_ context.Context, key string, ttl time.Duration) (Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.leases[key]; ok && !cur.released {
		return nil, nil
	}
	ls := &localLease{l: l, key: key}
	l.leases[key] = ls
	return ls, nil
}

// Put records val under key for ttl.
func (l *Local) Put(_ context.Context, key string, val []byte, ttl time.Duration) error {
	if len(val) > maxRecord {
		return errors.New("shared state: record too large")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for k, r := range l.records {
		if now.After(r.until) {
			delete(l.records, k)
		}
	}
	l.records[key] = localRecord{val: append([]byte(nil), val...), until: now.Add(ttl)}
	return nil
}

// Get reads the record under key while it lives.
func (l *Local) Get(_ context.Context, key string) ([]byte, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.records[key]
	if !ok || time.Now().After(r.until) {
		return nil, false, nil
	}
	return append([]byte(nil), r.val...), true, nil
}

// localLease is a Local lease: held until released (the process holding
// it cannot die without its store).
type localLease struct {
	l        *Local
	key      string
	released bool
}

func (ls *localLease) Release() {
	ls.l.mu.Lock()
	defer ls.l.mu.Unlock()
	ls.released = true
	if ls.l.leases[ls.key] == ls {
		delete(ls.l.leases, ls.key)
	}
}
