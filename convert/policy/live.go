package policy

import "sync/atomic"

// Live is the policy in force where it may be replaced while it is being
// read (serve reloads its file): readers take Current once per decision,
// so one request sees one policy; Replace swaps it whole. A nil *Live, or
// one holding nil, has no policy.
type Live struct{ p atomic.Pointer[held] }

// held is a policy with the number of its Replace: what was built under
// one generation is not served under the next (the proxy's documents).
type held struct {
	p   *Policy
	gen uint64
	// replaced is closed when the next generation is put in force.
	replaced chan struct{}
}

// NewLive holds p.
func NewLive(p *Policy) *Live {
	l := &Live{}
	l.p.Store(&held{p: p, replaced: make(chan struct{})})
	return l
}

// Current is the policy in force, or nil.
func (l *Live) Current() *Policy {
	if l == nil {
		return nil
	}
	if h := l.p.Load(); h != nil {
		return h.p
	}
	return nil
}

// Generation counts the Replace calls so far: a policy read by Current
// after Generation returned n is that of generation n or a later one.
func (l *Live) Generation() uint64 {
	if l == nil {
		return 0
	}
	if h := l.p.Load(); h != nil {
		return h.gen
	}
	return 0
}

// CurrentWithGeneration is Current and the Generation it belongs to, read
// together.
func (l *Live) CurrentWithGeneration() (*Policy, uint64) {
	if l == nil {
		return nil, 0
	}
	if h := l.p.Load(); h != nil {
		return h.p, h.gen
	}
	return nil, 0
}

// Watch is Current and its Generation, with a channel closed when a
// later Replace puts another in force: what a watcher of reloads (serve's
// events) waits on. Nil for a nil Live or one never holding a policy.
func (l *Live) Watch() (p *Policy, gen uint64, replaced <-chan struct{}) {
	if l == nil {
		return nil, 0, nil
	}
	if h := l.p.Load(); h != nil {
		return h.p, h.gen, h.replaced
	}
	return nil, 0, nil
}

// Replace puts p in force for every later Current.
func (l *Live) Replace(p *Policy) {
	for {
		old := l.p.Load()
		next := &held{p: p, replaced: make(chan struct{})}
		if old != nil {
			next.gen = old.gen + 1
		}
		if l.p.CompareAndSwap(old, next) {
			if old != nil && old.replaced != nil {
				close(old.replaced)
			}
			return
		}
	}
}
