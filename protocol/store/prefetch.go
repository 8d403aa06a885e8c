package store

import (
	"context"
	"sync"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
)

// Prefetcher starts, in the background of one request, the reads a
// listing will need before the listing asks for them: while the tag list's
// later pages are read (one round trip each), the versions of the first
// pages are already being read, at most Concurrency at a time. fn must
// read through the Store's caches, so that the listing's own read of the
// same version joins the read started here or finds its result: a
// prefetch never changes what is answered, only when. Reads end with ctx
// (the request's); as a fan-out (Each) stops at its first failure, the
// Prefetcher starts nothing more once fn has returned an error (the
// registry throttles or fails: the listing meets the remembered failure
// and answers it).
type Prefetcher struct {
	ctx   context.Context
	fn    func(context.Context, names.Version) error
	limit int

	mu      sync.Mutex
	queue   []names.Version
	running int
	stopped bool
	err     error // the first read's failure
}

// Prefetch returns a Prefetcher calling fn for the versions it is given.
func (s *Store) Prefetch(ctx context.Context, fn func(context.Context, names.Version) error) *Prefetcher {
	return &Prefetcher{ctx: ctx, fn: fn, limit: max(s.opts.Concurrency, 1)}
}

// Add queues v and starts a read when fewer than the limit run. It never
// blocks.
func (p *Prefetcher) Add(v names.Version) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.ctx.Err() != nil {
		return
	}
	if p.running < p.limit {
		p.running++
		go p.work(v)
		return
	}
	p.queue = append(p.queue, v)
}

// Stop starts nothing more (the reads running finish): the listing has
// every version now and reads the rest itself.
func (p *Prefetcher) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	p.queue = nil
}

// Failed starts nothing more and returns the first read's failure so
// far, if any: the listing's own fan-out would meet it (remembered by the
// cache) and stop there, so the listing answers it at once instead of
// starting reads of versions no prefetch read, which a registry that
// refuses everything would only refuse too. (The reads running are not
// waited for: the listing joins them through the caches.)
func (p *Prefetcher) Failed() error {
	p.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// work reads v, then the queued versions, until the queue is empty or the
// Prefetcher stopped. A read's failure or panic stops the Prefetcher; it
// is the cache's to remember, and Failed's to report.
func (p *Prefetcher) work(v names.Version) {
	for {
		if err := cache.Recover(func() error { return p.fn(p.ctx, v) }); err != nil {
			p.fail(err)
		}
		var ok bool
		if v, ok = p.next(); !ok {
			return
		}
	}
}

// fail stops the Prefetcher, keeping the first failure.
func (p *Prefetcher) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
	p.stopped = true
	p.queue = nil
}

func (p *Prefetcher) next() (names.Version, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.ctx.Err() != nil || len(p.queue) == 0 {
		p.running--
		return names.Version{}, false
	}
	v := p.queue[0]
	p.queue = p.queue[1:]
	return v, true
}
