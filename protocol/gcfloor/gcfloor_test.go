package gcfloor

import (
	"os"
	"runtime"
	"testing"
)

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		floor, scanned uint64
		want           int64
	}{
		{32 * mib, 3 * mib, 1075},    // 32/3 = 10.67: 1067, rounded up to 1075
		{32 * mib, 32 * mib, 100},    // the live heap reached the floor: GOGC=100
		{32 * mib, 64 * mib, 100},    // above it: base, never less
		{32 * mib, 20 * mib, 175},    // 160, rounded up
		{32 * mib, 1024, maxPercent}, // bounded
		{32 * mib, 0, 100},           // no collection yet
	} {
		if got := percentFor(c.floor, c.scanned, 100); got != c.want {
			t.Errorf("percentFor(%d, %d) = %d, want %d", c.floor, c.scanned, got, c.want)
		}
	}
	if got := percentFor(32*mib, 64*mib, 300); got != 300 {
		t.Errorf("with GOGC=300 and a live heap above the floor: %d, want 300", got)
	}
}

// The percentage follows the live heap, collection after collection:
// raised while it is below the floor, 100 once it is above, raised again
// when it falls, and 100 for good after stop.
func TestFloorFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "") // restored after the test
	os.Unsetenv("GOGC")  // the test binary's own environment may set it
	const floor = 16 << 20
	base := currentPercent() // 100, or the test binary's GOGC
	raised := func(p int) bool { return p > base && p >= 300 }
	stop, active := Floor(floor)
	t.Cleanup(stop)
	if !active {
		t.Fatal("Floor is not active without GOGC")
	}
	waitPercent(t, "small live heap", raised)

	live := make([]byte, 2*floor)
	for i := range live {
		live[i] = 1 // really live, really resident
	}
	waitPercent(t, "live heap twice the floor", func(p int) bool { return p == base })
	runtime.KeepAlive(live)
	live = nil

	waitPercent(t, "live heap freed", raised)
	stop()
	if p := currentPercent(); p != base {
		t.Fatalf("after stop GOGC=%d, want %d", p, base)
	}
	for range 3 {
		runtime.GC()
	}
	if p := currentPercent(); p != base {
		t.Fatalf("collections after stop set GOGC=%d", p)
	}
}

func TestOperatorsGOGCWins(t *testing.T) {
	t.Setenv("GOGC", "100")
	base := currentPercent()
	stop, active := Floor(64 << 20)
	defer stop()
	if active {
		t.Fatal("Floor is active although GOGC is set")
	}
	runtime.GC()
	runtime.GC()
	if p := currentPercent(); p != base {
		t.Fatalf("GOGC=%d, want the operator's %d", p, base)
	}
}

// waitPercent collects until the percentage set after a collection
// satisfies ok (the adjustment runs in the cleanup goroutine, after the
// collection returns).
func waitPercent(t *testing.T, what string, ok func(int) bool) {
	t.Helper()
	for range 200 {
		runtime.GC()
		runtime.Gosched()
		if ok(currentPercent()) {
			return
		}
	}
	t.Fatalf("%s: GOGC=%d", what, currentPercent())
}
