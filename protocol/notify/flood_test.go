package notify

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeChanges are notifications of n repositories no one may have
// cached (acme/fake<k>...), in the Receiver's scope all the same.
func fakeChanges(round, n int) []Change {
	out := make([]Change, n)
	for i := range out {
		out[i] = Change{Repository: fmt.Sprintf("acme/fake%d-%d", round, i)}
	}
	return out
}

// One holder of the secret who names ever new repositories (a
// template's placeholders accept any) overflows MaxPending at will: each
// overflow drops every repository's tag list. The first goes at once;
// further ones wait AllInterval, so a flood leaves every repository
// warm between them rather than cold at every Interval. Names sent in
// between are covered by the wider batch when it comes.
func TestFloodOfNewNamesDropsAllRarely(t *testing.T) {
	var all, applied atomic.Int64
	var firstAllBatch atomic.Int64 // the batch, counted from 1, that first dropped all
	start := time.Now()
	r, err := New(Options{Secret: []byte(testSecret), Scope: scopeAcme, MaxPending: 16,
		Interval: 5 * time.Millisecond, AllInterval: 300 * time.Millisecond,
		Apply: func(names []string, a bool) {
			batch := applied.Add(1)
			if a && all.Add(1) == 1 {
				firstAllBatch.Store(batch)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.Start(ctx)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; time.Since(start) < time.Second; round++ {
				r.accept(fakeChanges(w*1_000_000+round, 20))
				r.mu.Lock()
				pending := len(r.pending)
				r.mu.Unlock()
				if pending > 16 {
					t.Errorf("%d repositories pending, over MaxPending", pending)
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	// Every accept overflows MaxPending: the first batch already drops
	// all (a second, when a batch ran between the first accepts).
	if b := firstAllBatch.Load(); b < 1 || b > 2 {
		t.Errorf("the first overflow was applied by batch %d, want the first", b)
	}
	// 1 s of flood: at once, then once per 300 ms at most.
	if n := all.Load(); n > 5 {
		t.Errorf("%d batches dropped every repository in 1 s (%d batches in all), want at most 5", n, applied.Load())
	}
	n := applied.Load()
	r.accept([]Change{{Repository: "acme/after"}}) // still applied, within AllInterval
	for deadline := time.Now().Add(time.Second); applied.Load() == n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a notification after the flood was not applied within 1 s")
		}
	}
}
