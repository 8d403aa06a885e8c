package webhook

import (
	"context"
	"sync"
	"time"
)

// queued is an event waiting for delivery: its JSON, what the recent
// deliveries and logs name it by, and its address (a reload's filters
// judge it again).
type queued struct {
	id, typ, subject, address string
	body                      []byte
	// sealed is when the outbox entry it was recovered from was first
	// sealed (zero for an event emitted here): sealing it again keeps it.
	sealed time.Time
}

// queue is a subscription's bounded queue of events: a ring that, full,
// drops its oldest event for the new one (the receiver, when it is back,
// hears the latest). The ring grows as events wait, up to size: an idle
// subscription holds next to nothing.
type queue struct {
	mu     sync.Mutex
	items  []queued
	size   int // what items may grow to
	head   int // the oldest
	n      int
	closed bool
	ready  chan struct{} // a token when items are waiting
}

func newQueue(size int) *queue {
	return &queue{size: size, ready: make(chan struct{}, 1)}
}

// grow doubles the ring (at least 8, at most size), its events in order.
func (q *queue) grow() {
	items := make([]queued, min(max(2*len(q.items), 8), q.size))
	for i := range q.n {
		items[i] = q.items[(q.head+i)%len(q.items)]
	}
	q.items, q.head = items, 0
}

// push adds q, dropping the oldest event when full (dropped). A closed
// queue takes nothing (refused).
func (q *queue) push(item queued) (dropped, refused bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false, true
	}
	if q.n == len(q.items) && len(q.items) < q.size {
		q.grow()
	}
	if q.n == len(q.items) {
		q.items[q.head] = queued{}
		q.head = (q.head + 1) % len(q.items)
		q.n--
		dropped = true
	}
	q.items[(q.head+q.n)%len(q.items)] = item
	q.n++
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return dropped, false
}

// pop waits for the oldest event; false once the queue is closed and
// empty, or ctx is done.
func (q *queue) pop(ctx context.Context) (queued, bool) {
	for {
		if ctx.Err() != nil {
			return queued{}, false
		}
		q.mu.Lock()
		if q.n > 0 {
			item := q.items[q.head]
			q.items[q.head] = queued{}
			q.head = (q.head + 1) % len(q.items)
			q.n--
			if q.n > 0 {
				select {
				case q.ready <- struct{}{}:
				default:
				}
			}
			q.mu.Unlock()
			return item, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return queued{}, false
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return queued{}, false
		}
	}
}

// close takes no more events; pop returns what is left, then false.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// clear empties the queue, returning how many it held.
func (q *queue) clear() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.n
	q.items, q.head, q.n = nil, 0, 0
	return n
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}
