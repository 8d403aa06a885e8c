package pullthrough

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// A request that looked at the failure memory before a pull of its
// release failed, and asks to start it just after, gets the failure
// remembered, not a second pull from the origin (the race tofudl's
// retries met: a tampered release fetched, and counted, twice).
func TestStartAfterFailureRemembered(t *testing.T) {
	e := &Engine{
		opts:      Options{MaxPulls: 4, FailureTTL: time.Minute},
		shared:    sharedstate.NewLocal(),
		log:       slog.New(slog.DiscardHandler),
		metrics:   newMetrics(nil),
		inflight:  map[string]*Pull{},
		completed: cache.New[Stored](cache.Options{Name: "completed", TTL: time.Minute, MaxEntries: 8}),
		failures:  cache.New[error](cache.Options{Name: "failures", TTL: time.Minute, MaxEntries: 8}),
	}
	// The pull that just ended: finished records its failure.
	e.rememberFailure("fail-key", &Error{Failure: FailureTampered, Msg: "the origin's file does not match"})

	_, _, err := e.start(context.Background(), names.KindTofu, "key", "fail-key", "origin.example", nil, func() (*Pull, error) {
		t.Error("a second pull of a release that just failed was started")
		return nil, errors.New("not started")
	}, "", true)
	var pe *Error
	if !errors.As(err, &pe) || pe.Failure != FailureTampered || !strings.Contains(pe.Msg, "remembered") {
		t.Fatalf("start after the failure: %v, want the remembered tampered failure", err)
	}
	if len(e.inflight) != 0 {
		t.Errorf("%d pulls in flight", len(e.inflight))
	}
}
