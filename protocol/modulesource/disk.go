package modulesource

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// DefaultTempDisk is the default bound on the temporary disk the module
// fetches of a process use together (SetTempDiskBudget).
const DefaultTempDisk int64 = 8 << 30

// ErrBusy marks a fetch stopped because the fetches in progress together
// hold the whole temporary-disk budget: a passing condition, not the
// source's fault.
var ErrBusy = errors.New("busy")

// diskBudget is the temporary disk the module fetches of the process may
// hold together. When a fetch needs more than is left, the oldest fetch
// in progress waits for the others to give some back, and any other fails
// at once with ErrBusy, giving back what it holds: fetches never wait for
// each other in a circle, and the oldest always gets on.
type diskBudget struct {
	mu     sync.Mutex
	max    int64
	used   int64
	freed  chan struct{} // closed, and replaced, when bytes are given back
	next   uint64
	active map[uint64]bool // accounts open, by age
}

var tempDisk = &diskBudget{max: DefaultTempDisk, freed: make(chan struct{}), active: map[uint64]bool{}}

// SetTempDiskBudget bounds the temporary disk that the module fetches of
// this process hold together — downloads, git objects, trees and the
// packages packed from them (Fetched.Charge) — at n bytes (default
// DefaultTempDisk). See diskBudget for a fetch that would pass it.
func SetTempDiskBudget(n int64) {
	tempDisk.mu.Lock()
	defer tempDisk.mu.Unlock()
	tempDisk.max = n
	tempDisk.signal()
}

// TempDiskInUse is the temporary disk the module fetches of this process
// hold now.
func TempDiskInUse() int64 {
	tempDisk.mu.Lock()
	defer tempDisk.mu.Unlock()
	return tempDisk.used
}

// open starts an account and returns its age.
func (d *diskBudget) open() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next++
	d.active[d.next] = true
	return d.next
}

// take takes n bytes for account a (holding held), waiting for them if a
// is the oldest account open.
func (d *diskBudget) take(ctx context.Context, a uint64, held, n int64) error {
	for {
		d.mu.Lock()
		if d.used+n <= d.max {
			d.used += n
			d.mu.Unlock()
			return nil
		}
		if held+n > d.max || !d.oldest(a) {
			err := fmt.Errorf("%w: the module fetches in progress hold %d of the %d bytes of temporary disk they may use together; try again shortly", ErrBusy, d.used, d.max)
			d.mu.Unlock()
			return err
		}
		freed := d.freed
		d.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// oldest reports whether a is the oldest account open (d.mu held).
func (d *diskBudget) oldest(a uint64) bool {
	for other := range d.active {
		if other < a {
			return false
		}
	}
	return true
}

// give gives back n bytes; with closed, account a is closed too.
func (d *diskBudget) give(a uint64, n int64, closed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.used -= n
	if closed {
		delete(d.active, a)
	}
	d.signal()
}

// signal wakes the fetch waiting for bytes (d.mu held).
func (d *diskBudget) signal() {
	close(d.freed)
	d.freed = make(chan struct{})
}

// diskAccount is what one fetch holds of the budget.
type diskAccount struct {
	ctx    context.Context
	budget *diskBudget
	age    uint64
	mu     sync.Mutex
	held   int64
}

// newDiskAccount opens an account whose waits end with ctx.
func newDiskAccount(ctx context.Context) *diskAccount {
	return &diskAccount{ctx: ctx, budget: tempDisk, age: tempDisk.open()}
}

// charge takes n more bytes from the budget, or fails (ErrBusy, or the
// context's error).
func (a *diskAccount) charge(n int64) error {
	a.mu.Lock()
	held := a.held
	a.mu.Unlock()
	if err := a.budget.take(a.ctx, a.age, held, n); err != nil {
		return err
	}
	a.mu.Lock()
	a.held += n
	a.mu.Unlock()
	return nil
}

// refund gives back n bytes whose files were removed.
func (a *diskAccount) refund(n int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n = min(n, a.held)
	a.held -= n
	a.budget.give(a.age, n, false)
}

// close gives back everything the account holds, and closes it.
func (a *diskAccount) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.budget.give(a.age, a.held, true)
	a.held = 0
}
