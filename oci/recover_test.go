package oci

import (
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"
)

// A panic in a goroutine oci starts fails the group, not the process.
func TestGoRecoveredTurnsAPanicIntoAnError(t *testing.T) {
	var g errgroup.Group
	GoRecovered(&g, func() error { return nil })
	GoRecovered(&g, func() error {
		var m map[string][]int
		return []error{nil}[len(m["x"])+1] // out of range
	})
	err := g.Wait()
	if err == nil || !strings.Contains(err.Error(), "panic: runtime error: index out of range") {
		t.Fatalf("%v", err)
	}
}
