package policy

import "sync/atomic"

// Live is the policy in force where it may be replaced while it is being
// read (serve reloads its file): readers take Current once per decision,
// so one request sees one policy; Replace swaps it whole. A nil *Live, or
// one holding nil, has no policy.
type Live struct{ p atomic.Pointer[Policy] }

// NewLive holds p.
func NewLive(p *Policy) *Live {
	l := &Live{}
	l.p.Store(p)
	return l
}

// Current is the policy in force, or nil.
func (l *Live) Current() *Policy {
	if l == nil {
		return nil
	}
	return l.p.Load()
}

// Replace puts p in force for every later Current.
func (l *Live) Replace(p *Policy) { l.p.Store(p) }
