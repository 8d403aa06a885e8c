package oci

import (
	"fmt"
	"runtime/debug"

	"golang.org/x/sync/errgroup"
)

// GoRecovered runs fn in g; a panic in it (a bug some input met) becomes
// the group's error instead of ending the process: goroutines oci starts
// are outside the callers' recovery boundaries.
func GoRecovered(g *errgroup.Group, fn func() error) {
	g.Go(func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("internal error (a bug; please report it): panic: %v\n%s", p, debug.Stack())
			}
		}()
		return fn()
	})
}
