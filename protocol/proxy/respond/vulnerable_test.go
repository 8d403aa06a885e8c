package respond

import (
	"fmt"
	"sync"
	"testing"
)

// The set of vulnerable versions belongs to the database in force: a
// version counts once, a version found clean again leaves it, a match by
// another database is not counted, and a new database starts it afresh.
func TestVulnerableVersions(t *testing.T) {
	var mu sync.Mutex
	fp := "db1"
	v := &vulnerableVersions{current: func() string { mu.Lock(); defer mu.Unlock(); return fp }, set: map[string]struct{}{}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				v.note("a 1.0.0", "db1", true)
				v.note("a 1.1.0", "db1", false)
				_ = v.count()
			}
		})
	}
	wg.Wait()
	if n := v.count(); n != 1 {
		t.Fatalf("count %v, want 1", n)
	}
	v.note("a 1.1.0", "db0", true) // an earlier database's match, finished late
	v.note("b 2.0.0", "db1", true)
	v.note("b 2.0.0", "db1", false)
	if n := v.count(); n != 1 {
		t.Fatalf("after a stale match and a version found clean: %v, want 1", n)
	}
	mu.Lock()
	fp = "db2"
	mu.Unlock()
	if n := v.count(); n != 0 {
		t.Fatalf("after the database changed: %v, want 0", n)
	}
	v.note("a 1.0.0", "db2", true)
	v.note("a 1.0.0", "db1", true)
	if n := v.count(); n != 1 {
		t.Fatalf("matched by the new database: %v, want 1", n)
	}
	for i := range MaxVulnerableVersions + 10 {
		v.note(fmt.Sprintf("c %d", i), "db2", true)
	}
	if n := v.count(); n != MaxVulnerableVersions {
		t.Fatalf("bounded: %v, want %d", n, MaxVulnerableVersions)
	}
}
