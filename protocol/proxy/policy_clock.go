package proxy

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Policy decisions that change with time (min_age: a version ages in)
// are made when a document is built, and documents are cached: a
// document notes the earliest time one of its decisions changes
// (decidedUntil), and is built anew, not served, from then on, by
// Options.Now. So a version is listed as soon as it is old enough, without
// a restart, whatever the document cache's TTL. A failure (every version
// denied) carries the same time.

type decisionsKey struct{}

// decisions records, while a document is built, when its earliest
// time-bound decision changes. Builds read versions concurrently.
type decisions struct {
	mu    sync.Mutex
	first time.Time
}

// withDecisions is ctx recording the decisions of a document's build.
func withDecisions(ctx context.Context) (context.Context, *decisions) {
	d := &decisions{}
	return context.WithValue(ctx, decisionsKey{}, d), d
}

// noteDecidedUntil records, for the document being built with ctx (if
// any), that a decision in it changes at t.
func noteDecidedUntil(ctx context.Context, t time.Time) {
	d, ok := ctx.Value(decisionsKey{}).(*decisions)
	if !ok || t.IsZero() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.first.IsZero() || t.Before(d.first) {
		d.first = t
	}
}

// until is when the earliest decision recorded changes (zero: none does).
func (d *decisions) until() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.first
}

// wrap marks a failed build with when its decisions change.
func (d *decisions) wrap(err error) error {
	if t := d.until(); !t.IsZero() {
		return &decidedError{error: err, until: t}
	}
	return err
}

// decidedError is a build's failure that holds only until a policy
// decision changes (a version it denied ages in).
type decidedError struct {
	error
	until time.Time
}

func (e *decidedError) Unwrap() error { return e.error }

// undecided reports whether a cached document (or failure) holds a policy
// decision that has changed since it was built.
func (s *responder) undecided(d document, err error) bool {
	until := d.decidedUntil
	if err != nil {
		var de *decidedError
		if !errors.As(err, &de) {
			return false
		}
		until = de.until
	}
	return !until.IsZero() && !s.opts.Now().Before(until)
}
