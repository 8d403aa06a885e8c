package audit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Counts is a Sink that adds up the artifacts delivered, by version and
// client, and hands the sums to Flush every FlushEvery (a fleet's shared
// counts: sharedstate.Redis.CountDownloads). What waits is bounded by
// MaxKeys; a failed flush keeps its sums for the next, up to that bound.
type Counts struct {
	flush func(context.Context, []Count) error
	log   *slog.Logger

	mu      sync.Mutex
	pending map[Key]*Use
	dropped int64
	failing bool

	done    chan struct{}
	stopped chan struct{}
}

// Count is a sum of downloads of one version by one client, and the last.
type Count struct {
	Key
	Count int64
	Last  time.Time
}

// NewCounts starts a Counts flushing through flush every every.
func NewCounts(flush func(context.Context, []Count) error, every time.Duration, log *slog.Logger) *Counts {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Counts{flush: flush, log: log, pending: map[Key]*Use{}, done: make(chan struct{}), stopped: make(chan struct{})}
	go c.flushEvery(every)
	return c
}

// Record counts ev if it is an artifact delivered.
func (c *Counts) Record(ev *Event) {
	if !ev.Delivered() {
		return
	}
	k := Key{ev.Kind, ev.Address, ev.Version, ev.Client}
	c.mu.Lock()
	defer c.mu.Unlock()
	u := c.pending[k]
	if u == nil {
		if len(c.pending) >= MaxKeys {
			c.dropped++
			return
		}
		u = &Use{First: ev.Time, Last: ev.Time}
		c.pending[k] = u
	}
	u.count(1, ev.Time, ev.Time, "")
}

// Flush hands the sums waiting to the flush function.
func (c *Counts) Flush(ctx context.Context) {
	c.mu.Lock()
	pending := c.pending
	c.pending = map[Key]*Use{}
	c.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	counts := make([]Count, 0, len(pending))
	for k, u := range pending {
		counts = append(counts, Count{Key: k, Count: u.Count, Last: u.Last})
	}
	err := c.flush(ctx, counts)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		for k, u := range pending { // kept for the next flush, within the bound
			if mine := c.pending[k]; mine != nil {
				mine.count(u.Count, u.First, u.Last, "")
			} else if len(c.pending) < MaxKeys {
				c.pending[k] = u
			}
		}
		if !c.failing {
			c.log.Warn("download counts: the shared cache cannot take them; kept for the next try", "err", err)
		}
	}
	c.failing = err != nil
}

func (c *Counts) flushEvery(every time.Duration) {
	defer close(c.stopped)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), every)
			c.Flush(ctx)
			cancel()
		case <-c.done:
			return
		}
	}
}

// Close stops the timer and flushes what waits.
func (c *Counts) Close(ctx context.Context) {
	select {
	case <-c.done:
		return
	default:
	}
	close(c.done)
	<-c.stopped
	c.Flush(ctx)
}
