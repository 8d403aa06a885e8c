package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
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
	Log        *slog.Logger
}

// Defaults of Options.
const (
	DefaultMaxBytes   = 100 << 20
	DefaultMaxFiles   = 10
	DefaultFlushEvery = time.Second
	// maxBuffered bounds the events waiting for a slow or stuck disk;
	// past it events are counted lost rather than held.
	maxBuffered = 8 << 20
	// flushAt is the buffer size that is written without waiting.
	flushAt = 256 << 10
)

// Log writes events as JSON lines, buffered: an event waits at most
// FlushEvery, and Close writes what is left (serve closes it after the
// last request, on shutdown and SIGTERM). A write that fails — disk
// full, file unwritable — loses the events it held: they are counted in
// oci_tofu_audit_events_lost_total and logged once until a write
// succeeds again; serving goes on (docs/audit.md says why).
type Log struct {
	opts    Options
	out     io.Writer
	written prometheus.Counter
	lost    prometheus.Counter

	mu      sync.Mutex
	buf     bytes.Buffer
	pending int // events in buf
	closed  bool
	failing bool // the last write failed (logged once)
	// writeMu serialises writes to out, outside mu.
	writeMu sync.Mutex
	done    chan struct{}
	stopped chan struct{}
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
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	l := &Log{opts: o, done: make(chan struct{}), stopped: make(chan struct{}),
		written: prometheus.NewCounter(prometheus.CounterOpts{Name: "oci_tofu_audit_events_total", Help: "Audit events written."}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{Name: "oci_tofu_audit_events_lost_total",
			Help: "Audit events lost: the audit file could not be written (disk full, unwritable), or events waited beyond the buffer's bound."}),
	}
	switch o.Path {
	case "":
		return nil, errors.New("audit log: no path (\"-\" for standard output)")
	case "-":
		l.out = os.Stdout
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

// Record adds ev to the trail, with the schema version set.
func (l *Log) Record(ev *Event) {
	ev.V = SchemaVersion
	line, err := json.Marshal(ev)
	if err != nil { // only strings, numbers and a time: cannot happen
		l.lost.Inc()
		return
	}
	l.mu.Lock()
	if l.buf.Len()+len(line) >= maxBuffered {
		l.mu.Unlock()
		l.lost.Inc()
		return
	}
	l.buf.Write(line)
	l.buf.WriteByte('\n')
	l.pending++
	full := l.buf.Len() >= flushAt || l.closed
	l.mu.Unlock()
	if full {
		l.Flush()
	}
}

// Flush writes the buffered events.
func (l *Log) Flush() {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	l.mu.Lock()
	if l.pending == 0 {
		l.mu.Unlock()
		return
	}
	b, n := bytes.Clone(l.buf.Bytes()), l.pending
	l.buf.Reset()
	l.pending = 0
	l.mu.Unlock()
	l.write(b, n)
}

// write writes n events; a failure loses them, logged once per run of
// failures.
func (l *Log) write(b []byte, n int) {
	_, err := l.out.Write(b)
	l.mu.Lock()
	wasFailing := l.failing
	l.failing = err != nil
	l.mu.Unlock()
	if err != nil {
		l.lost.Add(float64(n))
		if !wasFailing {
			l.opts.Log.Error("audit events lost: the audit log cannot be written; serving goes on", "path", l.opts.Path, "err", err)
		}
		return
	}
	l.written.Add(float64(n))
	if wasFailing {
		l.opts.Log.Info("the audit log is written again", "path", l.opts.Path)
	}
}

func (l *Log) flushEvery() {
	defer close(l.stopped)
	t := time.NewTicker(l.opts.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.Flush()
		case <-l.done:
			return
		}
	}
}

// Close writes what is buffered and stops the timer. Events recorded
// after it (a request cut short by the shutdown's deadline) are written
// at once.
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
	l.Flush()
	return nil
}
