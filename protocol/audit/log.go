package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/natefinch/lumberjack.v2"
)

// Options say where a Log writes.
type Options struct {
	// Path is the file written, rotated at MaxBytes; "-" is standard
	// output, for a log pipeline.
	Path string
	// MaxBytes is the size a file is rotated at (rounded up to whole
	// MiB, lumberjack's unit); MaxFiles how many rotated files are kept
	// beside it (older ones are deleted).
	MaxBytes int64
	MaxFiles int
	// FlushEvery is how long an event may wait in the buffer.
	FlushEvery time.Duration
	// CloseTimeout bounds how long Close waits for the buffered events
	// to be written (serve: --shutdown-timeout).
	CloseTimeout time.Duration
	// Stdout is where Path "-" writes (os.Stdout when nil).
	Stdout io.Writer
	Log    *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxBytes     = 100 << 20
	DefaultMaxFiles     = 10
	DefaultFlushEvery   = time.Second
	DefaultCloseTimeout = 30 * time.Second
	// maxBuffered bounds the events waiting for a slow or stuck disk;
	// past it events are counted lost rather than held.
	maxBuffered = 8 << 20
	// flushAt is the buffer size that is written without waiting.
	flushAt = 256 << 10
)

// Log writes events as JSON lines, buffered, from a background writer:
// Record never waits on the file or pipe (a full disk, a log pipeline
// that stopped reading). An event waits at most FlushEvery, or is
// written at once past flushAt; Close writes what is left (serve closes
// it after the last request, on shutdown and SIGTERM), within
// CloseTimeout. Events are lost when a write fails — disk full, file
// unwritable — or when maxBuffered wait for a sink that does not keep
// up: they are counted in oci_tofu_audit_events_lost_total and logged
// once until a write succeeds again, which is logged too; serving goes
// on (docs/audit.md says why).
type Log struct {
	opts    Options
	out     io.Writer
	written prometheus.Counter
	lost    prometheus.Counter
	lostN   atomic.Uint64 // lost, for Lost

	mu      sync.Mutex
	buf     bytes.Buffer
	pending int // events in buf
	closed  bool
	failing bool // events are being lost (logged once)
	// writing says the writer goroutine runs (one at a time); it takes
	// buf and writes it until buf is empty.
	writing bool
	// recorded and settled count the events put in buf and those taken
	// out of it (written or lost); progress is closed, and replaced,
	// each time settled moves: Flush waits on it.
	recorded, settled uint64
	progress          chan struct{}
	done              chan struct{}
	stopped           chan struct{}
}

// Open starts a Log.
func Open(o Options) (*Log, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = DefaultFlushEvery
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = DefaultCloseTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	l := &Log{opts: o, done: make(chan struct{}), stopped: make(chan struct{}), progress: make(chan struct{}),
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "oci_tofu_audit_events_total", Help: "Audit events written."}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Name: "oci_tofu_audit_events_lost_total",
			Help: "Audit events lost: the audit file could not be written (disk full, unwritable), or events waited beyond the buffer's bound."}),
	}
	switch o.Path {
	case "":
		return nil, errors.New("audit log: no path (\"-\" for standard output)")
	case "-":
		l.out = o.Stdout
		if l.out == nil {
			l.out = os.Stdout
		}
	default:
		if err := checkWritable(o.Path); err != nil {
			return nil, err
		}
		lj := &lumberjack.Logger{Filename: o.Path, MaxSize: int((o.MaxBytes + 1<<20 - 1) >> 20), MaxBackups: o.MaxFiles, LocalTime: false}
		l.out = lj
	}
	go l.flushEvery()
	return l, nil
}

// checkWritable refuses at start an audit file that cannot be opened for
// appending (a missing directory, no permission): a mistake in the
// command line, not a disk filling up later.
func checkWritable(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return errors.New("audit log: " + err.Error())
	}
	return f.Close()
}

// Collectors are the Log's metrics, for the proxy's registry.
func (l *Log) Collectors() []prometheus.Collector { return []prometheus.Collector{l.written, l.lost} }

// Lost counts the events lost since Open (oci_tofu_audit_events_lost_total):
// what serve's audit.lost events report.
func (l *Log) Lost() uint64 { return l.lostN.Load() }

// lose counts n events lost.
func (l *Log) lose(n int) {
	l.lost.Add(float64(n))
	l.lostN.Add(uint64(n))
}

// Record adds ev to the trail, with the schema version set. It never
// waits on the sink: past maxBuffered, the event is lost.
func (l *Log) Record(ev *Event) {
	ev.V = SchemaVersion
	line, err := json.Marshal(ev)
	if err != nil { // only strings, numbers and a time: cannot happen
		l.lose(1)
		return
	}
	l.mu.Lock()
	if l.buf.Len()+len(line) >= maxBuffered {
		first := !l.failing
		l.failing = true
		l.mu.Unlock()
		l.lose(1)
		if first {
			l.opts.Log.Error("audit events lost: the audit log does not keep up (8 MiB of events wait for it); serving goes on", "path", l.opts.Path)
		}
		return
	}
	l.buf.Write(line)
	l.buf.WriteByte('\n')
	l.pending++
	l.recorded++
	if l.buf.Len() >= flushAt || l.closed {
		l.startWriter()
	}
	l.mu.Unlock()
}

// startWriter starts the writer unless it runs or nothing waits; l.mu
// is held.
func (l *Log) startWriter() {
	if l.writing || l.pending == 0 {
		return
	}
	l.writing = true
	go l.writeBuffered()
}

// writeBuffered is the writer: it writes what buf holds until it is
// empty.
func (l *Log) writeBuffered() {
	for {
		l.mu.Lock()
		if l.pending == 0 {
			l.writing = false
			l.mu.Unlock()
			return
		}
		b, n := l.buf.Bytes(), l.pending
		l.buf = bytes.Buffer{}
		l.pending = 0
		l.mu.Unlock()
		l.write(b, n)
	}
}

// write writes n events; a failure loses them, logged once per run of
// losses. The events count as settled (Flush) once counted and logged.
func (l *Log) write(b []byte, n int) {
	_, err := l.out.Write(b)
	if err != nil {
		l.lose(n)
	} else {
		l.written.Add(float64(n))
	}
	l.mu.Lock()
	wasFailing := l.failing
	l.failing = err != nil
	l.mu.Unlock()
	switch {
	case err != nil && !wasFailing:
		l.opts.Log.Error("audit events lost: the audit log cannot be written; serving goes on", "path", l.opts.Path, "err", err)
	case err == nil && wasFailing:
		l.opts.Log.Info("the audit log is written again", "path", l.opts.Path)
	}
	l.mu.Lock()
	l.settled += uint64(n)
	close(l.progress)
	l.progress = make(chan struct{})
	l.mu.Unlock()
}

// Flush writes the events recorded so far and waits until they are
// written (or lost).
func (l *Log) Flush() { l.flushWithin(nil) }

// flushWithin is Flush, waiting until timeout fires (nil: for ever); it
// reports whether the events were written (or lost) by then.
func (l *Log) flushWithin(timeout <-chan time.Time) bool {
	l.mu.Lock()
	target := l.recorded
	l.startWriter()
	l.mu.Unlock()
	for {
		l.mu.Lock()
		settled, progress := l.settled, l.progress
		l.mu.Unlock()
		if settled >= target {
			return true
		}
		select {
		case <-progress:
		case <-timeout:
			return false
		}
	}
}

func (l *Log) flushEvery() {
	defer close(l.stopped)
	t := time.NewTicker(l.opts.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.mu.Lock()
			l.startWriter()
			l.mu.Unlock()
		case <-l.done:
			return
		}
	}
}

// Close writes what is buffered, waiting at most CloseTimeout, and
// stops the timer. Events recorded after it (a request cut short by the
// shutdown's deadline) are written at once, in the background.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	close(l.done)
	<-l.stopped
	if !l.flushWithin(time.After(l.opts.CloseTimeout)) {
		l.mu.Lock()
		waiting := l.recorded - l.settled
		l.mu.Unlock()
		l.opts.Log.Error("audit events not written: the audit log did not take them within the shutdown's deadline", "path", l.opts.Path, "events", waiting, "timeout", l.opts.CloseTimeout.String())
	}
	return nil
}
