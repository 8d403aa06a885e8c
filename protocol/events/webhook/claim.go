package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// What a worker's claim decided.
type claimVerdict int

const (
	claimDeliver claimVerdict = iota // this process delivers
	claimEnded                       // another process ended the delivery
	claimStopped                     // the worker stopped while another held it
)

// Waits between asking again for a claim another process holds: from
// firstClaimWait, doubling up to maxClaimWait.
const (
	firstClaimWait = 10 * time.Millisecond
	maxClaimWait   = time.Second
	claimTimeout   = 5 * time.Second
)

// claim asks the Claimer for item's delivery, asking again while another
// process holds it. A Claimer that cannot be asked gives the delivery to
// this process (at least once).
func (w *worker) claim(item queued) (Hold, claimVerdict) {
	entry := w.seal(w.sub.Load(), item)
	wait := firstClaimWait
	for {
		ctx, cancel := context.WithTimeout(w.ctx, claimTimeout)
		c, err := w.d.opts.Claimer.Claim(ctx, w.name, item.id, entry)
		cancel()
		switch {
		case err != nil && w.ctx.Err() != nil:
			return nil, claimStopped
		case err != nil:
			w.d.opts.Logger.Warn("events: a delivery's claim failed, delivering", "subscription", w.name, "event", item.id, "error", err.Error())
			return noHold{}, claimDeliver
		case c.Hold != nil:
			return c.Hold, claimDeliver
		case c.Ended:
			return nil, claimEnded
		}
		if !w.sleep(wait) {
			return nil, claimStopped
		}
		wait = min(2*wait, maxClaimWait)
	}
}

// release ends a delivery's hold: done, unless the worker was stopped
// before it ended (the delivery then failed here: abandoned, for another
// process to take over).
func (w *worker) release(h Hold, r result) {
	ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
	defer cancel()
	if r.outcome == OutcomeFailed && w.ctx.Err() != nil {
		h.Abandon(ctx)
		return
	}
	h.Done(ctx)
}

// sleep waits d; false when the worker is stopped meanwhile.
func (w *worker) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// A Recoverer is a Claimer keeping the entry of each delivery held (an
// outbox the fleet shares): Recover gives back, for a subscription, at
// most limit entries whose holders stopped without ending them (killed,
// or stopping), each to one process for a while. The Dispatcher queues
// them again, so that an event only a killed replica emitted is still
// delivered.
type Recoverer interface {
	Recover(ctx context.Context, subscription string, limit int) ([][]byte, error)
}

// DefaultRecoverEvery is how often a Dispatcher asks its Recoverer.
const DefaultRecoverEvery = 5 * time.Second

// recoverBatch bounds the entries asked for per subscription each time.
const recoverBatch = 64

// An entry is the MAC (entryMACSize bytes), when it was first sealed
// (entryTimeSize: Unix milliseconds, big-endian), then the event.
const (
	entryMACSize  = sha256.Size
	entryTimeSize = 8
)

// maxEntryAge bounds how long after it was first sealed an entry is
// delivered again: a fleet's done marks are kept that long
// (sharedstate.DefaultClaimMemory), so an entry older than them, replayed
// into the outbox by whoever can write to Redis, would be sent again.
// An entry sealed that far in the future (a replica's clock far off) is
// refused too.
const maxEntryAge = sharedstate.DefaultClaimMemory

// seal is item's entry: an HMAC-SHA256 of the subscription's name, the
// time it was first sealed (now, or when the entry it was recovered
// from was) and the event, keyed with the subscription's first secret,
// then that time and the event. What is read back from a shared store
// is delivered (signed) only when it verifies with one of the
// subscription's secrets: a store's writer that knows none cannot make
// the proxy sign its events, nor make an old entry look new.
func (w *worker) seal(s *Subscription, item queued) []byte {
	if len(s.secrets) == 0 {
		return nil
	}
	at := item.sealed
	if at.IsZero() {
		at = time.Now()
	}
	return sealEntry(s.secrets[0], w.name, at, item.body)
}

// sealEntry is the entry of body for subscription, sealed at at with key.
func sealEntry(key []byte, subscription string, at time.Time, body []byte) []byte {
	stamp := binary.BigEndian.AppendUint64(nil, uint64(at.UnixMilli()))
	out := entryMAC(key, subscription, stamp, body)
	return append(append(out, stamp...), body...)
}

func entryMAC(key []byte, subscription string, stamp, body []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("oci-tofu webhook outbox v2\x00" + subscription + "\x00"))
	h.Write(stamp)
	h.Write(body)
	return h.Sum(nil)
}

// Why an entry was not queued again.
var (
	errEntryUnverified = errors.New("an outbox entry that does not verify with the subscription's secrets (or is of the format before entries carried their time) was ignored")
	errEntryOld        = errors.New("an outbox entry sealed more than a day ago (or ahead) was ignored: its done mark may be forgotten")
	errEntryNotEvent   = errors.New("an outbox entry that is not an event was ignored")
)

// open reads an entry back: the event queued again (with when it was
// first sealed), or why not.
func (w *worker) open(s *Subscription, entry []byte, now time.Time) (queued, error) {
	if len(entry) <= entryMACSize+entryTimeSize {
		return queued{}, errEntryUnverified
	}
	mac, stamp, body := entry[:entryMACSize], entry[entryMACSize:entryMACSize+entryTimeSize], entry[entryMACSize+entryTimeSize:]
	verified := false
	for _, k := range s.secrets {
		verified = verified || hmac.Equal(mac, entryMAC(k, w.name, stamp, body))
	}
	if !verified {
		return queued{}, errEntryUnverified
	}
	at := time.UnixMilli(int64(binary.BigEndian.Uint64(stamp)))
	if age := now.Sub(at); age > maxEntryAge || age < -maxEntryAge {
		return queued{}, errEntryOld
	}
	var head struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Subject string `json:"subject"`
	}
	if json.Unmarshal(body, &head) != nil || head.ID == "" || head.Type == "" {
		return queued{}, errEntryNotEvent
	}
	address := events.Event{Subject: head.Subject}.Address() // what the filters match, as Emit found it
	return queued{id: head.ID, typ: head.Type, subject: head.Subject, address: address, body: append([]byte(nil), body...), sealed: at}, nil
}

// recovery asks the Recoverer every RecoverEvery for the entries of each
// subscription, until stop.
type recovery struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startRecovery starts asking, when the Claimer is a Recoverer.
func (d *Dispatcher) startRecovery() *recovery {
	rc, ok := d.opts.Claimer.(Recoverer)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &recovery{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t := time.NewTicker(d.opts.RecoverEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			d.recoverEntries(ctx, rc)
		}
	}()
	return r
}

// stop stops asking and waits for the last ask to end.
func (r *recovery) stop() {
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
}

// recoverEntries queues again the entries the Recoverer gives back that
// verify and that their subscription still wants. A subscription whose
// outbox cannot be read is skipped (logged when it starts failing, not
// every pass): the others' are read all the same.
func (d *Dispatcher) recoverEntries(ctx context.Context, rc Recoverer) {
	d.mu.RLock()
	workers := append([]*worker(nil), d.workers...)
	d.mu.RUnlock()
	for _, w := range workers {
		actx, cancel := context.WithTimeout(ctx, claimTimeout)
		entries, err := rc.Recover(actx, w.name, recoverBatch)
		cancel()
		if err != nil {
			if !w.outboxFailing.Swap(true) {
				d.opts.Logger.Warn("events: the outbox could not be read", "subscription", w.name, "error", err.Error())
			}
			continue // the others' outboxes may read
		}
		w.outboxFailing.Store(false)
		s := w.sub.Load()
		for _, e := range entries {
			item, err := w.open(s, e, time.Now())
			if err != nil {
				d.opts.Logger.Warn("events: "+err.Error(), "subscription", w.name)
				continue
			}
			if !s.Wants(item.typ, events.Event{Subject: item.subject}.Address()) {
				continue
			}
			dropped, refused := w.q.push(item)
			if dropped || refused {
				w.dropped.Inc()
			}
			if refused {
				continue
			}
			d.metrics.recovered.WithLabelValues(w.name).Inc()
			d.opts.Logger.Info("events: a delivery another replica left unended is taken over", "subscription", w.name, "event", item.id)
		}
	}
}
