package source

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// The policy's decisions as the gate tells the proxy of them: each one
// that shaped an answer (Decision, told to gate.Policy.Observe: the proxy
// counts them and records denials for its page), and, while a document
// is built, when the earliest of its time-bound ones changes (Decisions).

// Decision is a decision of the policy in force on an address, as
// gate.Policy.Observe is told it.
type Decision struct {
	policy.Decision
	Policy *policy.Policy
	// Generation is Policy's (policy.Live.CurrentWithGeneration).
	Generation uint64
	Kind       names.Kind
	Address    string
	// Version is nil for a decision on every version.
	Version *names.Version
	// FromFacts: made on facts read from the registry (min_age, signers).
	FromFacts bool
	// Asked: made on a version a request named (a download, a version's
	// document), before anything is read: it may exist nowhere. One in
	// a listing, or on facts, is on a version that exists.
	Asked bool
}

// Policy decisions that change with time (min_age: a version ages in)
// are made when a document is built, and documents are cached: a
// document notes the earliest time one of its decisions changes, and is
// built anew, not served, from then on. So a version is listed as soon
// as it is old enough, without a restart, whatever the document cache's
// TTL. A failure (every version denied) carries the same time. The gate
// notes its time-bound decisions (NoteDecidedUntil) in the context the
// proxy builds a document with (WithDecisions).

type decisionsKey struct{}

// Decisions records, while a document is built, when its earliest
// time-bound decision changes. Builds read versions concurrently.
type Decisions struct {
	mu    sync.Mutex
	first time.Time
}

// WithDecisions is ctx recording the decisions of a document's build.
func WithDecisions(ctx context.Context) (context.Context, *Decisions) {
	d := &Decisions{}
	return context.WithValue(ctx, decisionsKey{}, d), d
}

// NoteDecidedUntil records, for the document being built with ctx (if
// any), that a decision in it changes at t.
func NoteDecidedUntil(ctx context.Context, t time.Time) {
	d, ok := ctx.Value(decisionsKey{}).(*Decisions)
	if !ok || t.IsZero() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.first.IsZero() || t.Before(d.first) {
		d.first = t
	}
}

// Until is when the earliest decision recorded changes (zero: none does).
func (d *Decisions) Until() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.first
}

// Wrap marks a failed build with when its decisions change.
func (d *Decisions) Wrap(err error) error {
	if t := d.Until(); !t.IsZero() {
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

// DecidedUntil is when the policy decision a failure Wrap marked
// changes; ok is false for any other error.
func DecidedUntil(err error) (t time.Time, ok bool) {
	var de *decidedError
	if !errors.As(err, &de) {
		return time.Time{}, false
	}
	return de.until, true
}

// Earliest is the earlier of a and b, a zero time meaning none: when a
// listing made of several was read.
func Earliest(a, b time.Time) time.Time {
	if a.IsZero() {
		return b
	}
	if b.IsZero() || a.Before(b) {
		return a
	}
	return b
}
