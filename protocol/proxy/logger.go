package proxy

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// NewLogger is serve's logger: slog text or json records (format, from
// --log-format) at level and above (--log-level: debug, info, warn,
// error), written to w through a LogWriter, which the caller closes
// before it exits, so that no line is left unwritten.
func NewLogger(w io.Writer, format, level string) (*slog.Logger, *LogWriter, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, fmt.Errorf("--log-level: %w", err)
	}
	ho := &slog.HandlerOptions{Level: lv}
	lw := NewLogWriter(w)
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(lw, ho)), lw, nil
	case "json":
		return slog.New(slog.NewJSONHandler(lw, ho)), lw, nil
	default:
		return nil, nil, fmt.Errorf("--log-format must be text or json")
	}
}

// maxLogPending bounds the lines a LogWriter holds unwritten: past it a
// line waits, as a write to a full pipe does.
const maxLogPending = 1 << 20

// logGather is how long LogWriter gathers lines after a write before it
// writes again: at thousands of requests a second, a write of each
// few milliseconds' lines in place of a system call per line.
const logGather = 5 * time.Millisecond

// LogWriter writes the lines given to it in order, from a goroutine of
// its own, at most one write each logGather: a line per request costs a
// copy, not a system call made while slog's handler holds the lock every
// other request's line waits on (measured in docs/benchmarks.md, "Warm
// answers at serve's defaults"). A line after a quiet spell is written
// at once; none waits longer than logGather and the write before it.
type LogWriter struct {
	w       io.Writer
	mu      sync.Mutex
	room    sync.Cond // signalled when pending is taken
	pending []byte
	wake    chan struct{}
	done    chan struct{}
	closed  bool
}

// NewLogWriter starts a LogWriter over w.
func NewLogWriter(w io.Writer) *LogWriter {
	lw := &LogWriter{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	lw.room.L = &lw.mu
	go lw.run()
	return lw
}

// Write queues p; after Close it writes p itself.
func (lw *LogWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	for len(lw.pending) >= maxLogPending && !lw.closed {
		lw.room.Wait()
	}
	if lw.closed {
		lw.mu.Unlock()
		return lw.w.Write(p)
	}
	lw.pending = append(lw.pending, p...)
	select { // under mu: Close closes wake under it too
	case lw.wake <- struct{}{}:
	default:
	}
	lw.mu.Unlock()
	return len(p), nil
}

// run writes what is pending each time it is woken, until Close.
func (lw *LogWriter) run() {
	defer close(lw.done)
	var spare []byte
	for {
		_, open := <-lw.wake
		lw.mu.Lock()
		out := lw.pending
		lw.pending = spare[:0]
		lw.room.Broadcast()
		lw.mu.Unlock()
		if len(out) > 0 {
			lw.w.Write(out) // nowhere to report a failed log write
		}
		if !open {
			return
		}
		if cap(out) <= maxLogPending {
			spare = out
		}
		time.Sleep(logGather) // Close waits for it too: no line is lost
	}
}

// Close writes every line given so far and returns when they are
// written; later lines are written as they come.
func (lw *LogWriter) Close() error {
	lw.mu.Lock()
	if lw.closed {
		lw.mu.Unlock()
		return nil
	}
	lw.closed = true
	close(lw.wake)
	lw.room.Broadcast()
	lw.mu.Unlock()
	<-lw.done
	return nil
}
