package pullthrough

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// Pull-through across replicas (docs/proxy.md, "A fleet: shared state on
// Redis"): with a shared store, a replica pulls a release only while it
// holds the release's lease; the others wait until the holder's record
// says it is stored (or failed), then serve it from the registry. A
// holder that dies stops renewing: its lease expires and a waiting
// replica takes it and pulls the release itself. Records are hints: a
// stored root is read from the registry by digest and checked by the
// proxy (Stored.Shared); a failure is only its class.

// sharedStored is the record of a stored release: its root.
type sharedStored struct {
	Root ocispec.Descriptor `json:"root"`
}

// sharedFailed is the record of a failed release: its class.
type sharedFailed struct {
	Failure string `json:"failure"`
}

func leaseKey(key string) string   { return "lease " + key }
func storedKey(key string) string  { return "stored " + key }
func failedKey(fail string) string { return "failed " + fail }

// shareStored tells the other replicas what a pull stored.
func (e *Engine) shareStored(key string, res Stored) {
	if !e.shared.Shared() {
		return
	}
	b, _ := json.Marshal(sharedStored{Root: res.Root})
	e.shared.Put(context.Background(), storedKey(key), b, recentTTL)
}

// rememberFailure remembers a failed release for FailureTTL, here and,
// unless the pull was only stopped, in the shared store.
func (e *Engine) rememberFailure(failKey string, err error) {
	e.failures.Add(failKey, err, 0)
	if !e.shared.Shared() || errors.Is(err, context.Canceled) {
		return
	}
	b, _ := json.Marshal(sharedFailed{Failure: Classify(err)})
	e.shared.Put(context.Background(), failedKey(failKey), b, e.opts.FailureTTL)
}

// sharedStoredRecord reads what another replica stored under key (not
// when the proxy found the record wrong: Distrust).
func (e *Engine) sharedStoredRecord(ctx context.Context, key string) (Stored, bool) {
	if _, bad := e.distrusted.Peek(key); bad {
		return Stored{}, false
	}
	b, ok, err := e.shared.Get(ctx, storedKey(key))
	if err != nil || !ok {
		return Stored{}, false
	}
	var rec sharedStored
	if json.Unmarshal(b, &rec) != nil || rec.Root.Digest.Validate() != nil || rec.Root.Size <= 0 {
		e.log.Warn("pull-through: ignoring a malformed record in the shared cache", slog.String("key", storedKey(key)))
		return Stored{}, false
	}
	res := Stored{Root: ocispec.Descriptor{MediaType: rec.Root.MediaType, Digest: rec.Root.Digest, Size: rec.Root.Size}, Shared: true}
	e.sharedDone.Add(key, res, 1024)
	return res, true
}

// Distrust sets aside the shared record of what was stored under key,
// which the registry did not confirm: this replica then pulls the
// release itself (and records what it stored).
func (e *Engine) Distrust(key string) {
	e.distrusted.Add(key, true, 0)
}

// sharedFailure is the failure another replica remembers for failKey, as
// an Error of its class (the message is made here, never read).
func (e *Engine) sharedFailure(ctx context.Context, failKey, host string) (error, bool) {
	if !e.shared.Shared() {
		return nil, false
	}
	b, ok, err := e.shared.Get(ctx, failedKey(failKey))
	if err != nil || !ok {
		return nil, false
	}
	var rec sharedFailed
	if json.Unmarshal(b, &rec) != nil {
		return nil, false
	}
	switch rec.Failure {
	case FailureTampered, FailureNotFound, FailureUnreachable, FailureRefused:
	default:
		rec.Failure = FailureError
	}
	return &Error{Failure: rec.Failure, Msg: failureMessage(host, rec.Failure) + " (seen by another replica)"}, true
}

// errElsewhere: another replica holds the release's lease and the caller
// does not wait.
var errElsewhere = errors.New("another replica is pulling this release")

// claim decides whether this replica pulls key: it returns the lease (nil
// when the shared store cannot be asked: the replica pulls on its own),
// ErrFinished when another replica stored the release, its remembered
// failure, or, while another replica holds the lease, waits (with wait)
// until one of those, at most SharedWait and the request's deadline.
func (e *Engine) claim(ctx context.Context, key, failKey, host string, wait bool) (sharedstate.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, e.opts.SharedWait)
	defer cancel()
	delay := 20 * time.Millisecond
	for waited := false; ; waited = true {
		if err := e.recorded(ctx, key, failKey, host); err != nil {
			return nil, err
		}
		lease, err := e.shared.Lease(ctx, leaseKey(key), e.opts.LeaseTTL)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, waitEnded(ctx)
		case err != nil:
			return nil, nil // on our own: logged and counted by the store
		case lease != nil:
			// The holder records its outcome, then releases the lease: a
			// lease taken between the two (the records read above being
			// older) is let go again.
			if err := e.recorded(ctx, key, failKey, host); err != nil {
				lease.Release()
				return nil, err
			}
			if waited {
				e.metrics.sharedWaits.WithLabelValues("took_over").Inc()
			}
			return lease, nil
		case !wait:
			return nil, errElsewhere
		case e.inflightPull(key) != nil:
			return nil, nil // a request here took it: join its pull
		}
		if !waited {
			e.metrics.sharedWaits.WithLabelValues("waited").Inc()
		}
		select {
		case <-ctx.Done():
			return nil, waitEnded(ctx)
		case <-time.After(delay):
		}
		delay = min(delay*2, time.Second)
	}
}

// recorded is ErrFinished or the remembered failure when another replica
// recorded the outcome of key, else nil.
func (e *Engine) recorded(ctx context.Context, key, failKey, host string) error {
	if _, ok := e.sharedStoredRecord(ctx, key); ok {
		return ErrFinished
	}
	if err, ok := e.sharedFailure(ctx, failKey, host); ok {
		return err
	}
	return nil
}

// waitEnded is what a request learns that stopped waiting for another
// replica's pull (its deadline, or SharedWait).
func waitEnded(ctx context.Context) error {
	return &Error{Failure: FailureBusy, RetryAfter: 5, Err: ctx.Err(),
		Msg: "another replica of the proxy is pulling this release from its origin; try again shortly"}
}

// inflightPull is the pull running here under key, or nil.
func (e *Engine) inflightPull(key string) *Pull {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.inflight[key]
}

// Completed is what the pull under key stored, while remembered here or
// (Stored.Shared) by another replica.
func (e *Engine) Completed(ctx context.Context, key string) (Stored, bool) {
	if res, ok := e.completed.Peek(key); ok {
		return res, true
	}
	if !e.shared.Shared() {
		return Stored{}, false
	}
	if _, bad := e.distrusted.Peek(key); bad {
		return Stored{}, false
	}
	if res, ok := e.sharedDone.Peek(key); ok {
		return res, true
	}
	return e.sharedStoredRecord(ctx, key)
}

// failureMessage is what a client is told of a release that failed.
func failureMessage(host, failure string) string {
	switch failure {
	case FailureTampered:
		return fmt.Sprintf("the release from origin %s failed verification (signature or digests) and was not stored", host)
	case FailureNotFound:
		return fmt.Sprintf("not held by the registry, and origin %s does not offer it", host)
	case FailureUnreachable:
		return fmt.Sprintf("not held by the registry, and origin %s is unreachable", host)
	case FailureRefused:
		return fmt.Sprintf("not held by the registry, and what origin %s offers was refused (a download location or source that is not https or outside the allowed hosts, or a tree that fails the module package checks)", host)
	}
	return fmt.Sprintf("not held by the registry, and origin %s answered with an error", host)
}
