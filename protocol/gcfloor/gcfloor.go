// Package gcfloor owns the Go collector's pacing in `oci-tofu serve`: it
// lets the garbage between two collections reach a floor before the
// heap's own size does.
//
// With GOGC=100 the collector starts a cycle when the heap has grown by
// its live size (plus stacks and globals). A proxy whose caches are still
// nearly empty has a live heap of a few MB, so under load it collects
// every few MB allocated: dozens of cycles a second, each marking the whole
// live heap, with idle-priority mark workers taking whatever CPU is free
// (docs/benchmarks.md, "The collector's floor"). After each collection
// Floor sets the collector's percentage so that the next one starts when
// the garbage reaches the larger of the live heap (GOGC=100, as before)
// and the floor. Once the live heap is above the floor (caches filling)
// the percentage is 100 again, so the largest heap the process reaches
// is what it was: twice a full cache's live heap. GOMEMLIMIT still caps
// the heap whatever the percentage (the runtime collects when it nears
// the limit), and an operator's GOGC turns Floor off.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The runtime's figures after the last collection that its pacing
// scales with GOGC: the live heap, and the stacks and globals it scans.
var samples = []string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// maxPercent bounds the percentage (a live heap of a few KB would
// otherwise ask for millions).
const maxPercent = 10000

// Floor keeps the garbage allowed between collections at least floor
// bytes, until stop is called (which restores the percentage it found).
// It does nothing, and says so (active false), when floor is not
// positive or the operator set GOGC.
func Floor(floor int64) (stop func(), active bool) {
	if floor <= 0 || os.Getenv("GOGC") != "" {
		return func() {}, false
	}
	t := &tuner{floor: uint64(floor), base: currentPercent()}
	t.percent = int64(t.base)
	t.adjust()
	t.arm()
	return t.stop, true
}

type tuner struct {
	floor   uint64
	base    int // the percentage before Floor, and whenever the live heap is above the floor
	mu      sync.Mutex
	percent int64 // as last set
	stopped bool
}

// currentPercent is the collector's percentage (GOGC).
func currentPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	return int(s[0].Value.Uint64())
}

// arm runs adjust after the next collection, and so on after each: a
// cleanup of an object that nothing references runs once a collection
// has found it unreachable.
func (t *tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *tuner) {
		if t.adjust() {
			t.arm()
		}
	}, t)
}

// sentinel holds a pointer so that it is not batched with other small
// objects by the tiny allocator (whose blocks are freed together).
type sentinel struct {
	_ *byte
	_ [8]byte
}

// adjust sets the percentage for the next cycle from the last one's
// figures: base, or what makes the garbage allowed reach the floor. It
// is false once stopped.
func (t *tuner) adjust() bool {
	s := make([]metrics.Sample, len(samples))
	for i, name := range samples {
		s[i].Name = name
	}
	metrics.Read(s)
	var scanned uint64
	for _, v := range s {
		if v.Value.Kind() == metrics.KindUint64 {
			scanned += v.Value.Uint64()
		}
	}
	p := percentFor(t.floor, scanned, t.base)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped && p != t.percent {
		t.percent = p
		debug.SetGCPercent(int(p))
	}
	return !t.stopped
}

// percentFor is the percentage whose share of scanned is at least floor,
// rounded up to a multiple of 25 (so that small changes of the live heap
// do not change it at each cycle); never below base nor above
// maxPercent.
func percentFor(floor, scanned uint64, base int) int64 {
	if scanned == 0 {
		return int64(base)
	}
	p := (floor*100 + scanned - 1) / scanned
	p = (p + 24) / 25 * 25
	switch {
	case p <= uint64(base):
		return int64(base)
	case p > maxPercent:
		return maxPercent
	}
	return int64(p)
}

func (t *tuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		debug.SetGCPercent(t.base)
	}
}
