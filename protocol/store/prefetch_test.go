package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// VersionsEarly hands out, while it lists, exactly the versions whose
// canonical tag exists (the ones a listing reads by tag): not "1.2"
// (its canonical 1.2.0 is missing), not "v1.3.0" or "latest"; and only
// when it reads the tag list itself, not from the cache.
func TestVersionsEarlyGivesTheVersionsReadByTag(t *testing.T) {
	ctx := context.Background()
	l := newLayout(t)
	push(t, l.repo, providerArtifact(t, "1.0.0"), "1.0.0", "1.0.1_build.5", "1.2", "v1.3.0", "latest", "1.0.0.0", "1.4", "1.4.0")
	s := newStore(t, store.Options{})
	var early []string
	listing, err := s.Repo(l.ref).VersionsEarly(ctx, func(v names.Version) { early = append(early, v.String()) })
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(early)
	if want := []string{"1.0.0", "1.0.1+build.5", "1.4.0"}; !slices.Equal(early, want) {
		t.Errorf("early versions %q, want %q", early, want)
	}
	if len(listing.Versions) != 4 {
		t.Errorf("listing %v, want 1.0.0, 1.0.1+build.5, 1.2.0 and 1.4.0", listing.Versions)
	}
	early = nil
	if _, err := s.Repo(l.ref).VersionsEarly(ctx, func(v names.Version) { early = append(early, v.String()) }); err != nil {
		t.Fatal(err)
	}
	if len(early) != 0 {
		t.Errorf("a listing from the cached tag list gave early versions %q", early)
	}
}

// A Prefetcher runs at most Concurrency reads at once, never blocks its
// caller, and starts nothing after Stop (the reads running finish).
func TestPrefetcherIsBoundedAndStops(t *testing.T) {
	s := newStore(t, store.Options{Concurrency: 3})
	release := make(chan struct{})
	var mu sync.Mutex
	var started []string
	running, most := 0, 0
	pf := s.Prefetch(context.Background(), func(_ context.Context, v names.Version) error {
		mu.Lock()
		started = append(started, v.String())
		running++
		most = max(most, running)
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return nil
	})
	for i := range 10 {
		pf.Add(names.MustParseVersion(fmt.Sprintf("1.0.%d", i))) // returns while the reads block
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return running == 3 })
	pf.Stop()
	close(release)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return running == 0 })
	time.Sleep(20 * time.Millisecond) // a read wrongly started after Stop would show by now
	mu.Lock()
	defer mu.Unlock()
	if most != 3 || len(started) != 3 {
		t.Errorf("%d reads at most at once, %d started (%q); want 3 and 3: the queued ones dropped at Stop", most, len(started), started)
	}
}

// Without Stop a Prefetcher works through its queue; with its request's
// context done it starts nothing.
func TestPrefetcherDrainsItsQueueUntilTheRequestEnds(t *testing.T) {
	s := newStore(t, store.Options{Concurrency: 2})
	var mu sync.Mutex
	done := map[string]bool{}
	pf := s.Prefetch(context.Background(), func(_ context.Context, v names.Version) error {
		mu.Lock()
		defer mu.Unlock()
		done[v.String()] = true
		return nil
	})
	for i := range 8 {
		pf.Add(names.MustParseVersion(fmt.Sprintf("2.0.%d", i)))
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(done) == 8 })

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	gone := s.Prefetch(ctx, func(context.Context, names.Version) error { called = true; return nil })
	gone.Add(names.MustParseVersion("3.0.0"))
	time.Sleep(20 * time.Millisecond)
	if called {
		t.Error("a prefetch started for a request that had ended")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not reached in 10 s")
}

// A Prefetcher starts nothing more after a read fails (a fan-out stops at
// its first failure): with one read at a time, the versions queued behind
// the failed one are never read.
func TestPrefetcherStopsAtTheFirstFailure(t *testing.T) {
	s := newStore(t, store.Options{Concurrency: 1})
	release := make(chan struct{})
	var mu sync.Mutex
	var read []string
	pf := s.Prefetch(context.Background(), func(_ context.Context, v names.Version) error {
		<-release
		mu.Lock()
		defer mu.Unlock()
		read = append(read, v.String())
		return errors.New("429 Too Many Requests")
	})
	for i := range 5 {
		pf.Add(names.MustParseVersion(fmt.Sprintf("4.0.%d", i)))
	}
	close(release)
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(read) > 0 })
	time.Sleep(20 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(read) != 1 {
		t.Errorf("read %q after the first read failed, want only the first", read)
	}
	if err := pf.Failed(); err == nil || !strings.Contains(err.Error(), "429") {
		t.Errorf("Failed: %v, want the first read's failure", err)
	}
}

// A Prefetcher whose reads all succeeded reports no failure.
func TestPrefetcherWithoutFailure(t *testing.T) {
	s := newStore(t, store.Options{Concurrency: 2})
	var n atomic.Int32
	pf := s.Prefetch(context.Background(), func(context.Context, names.Version) error { n.Add(1); return nil })
	for i := range 3 {
		pf.Add(names.MustParseVersion(fmt.Sprintf("4.0.%d", i)))
	}
	waitFor(t, func() bool { return n.Load() == 3 })
	if err := pf.Failed(); err != nil {
		t.Errorf("Failed: %v, want nil", err)
	}
}
