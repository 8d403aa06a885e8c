package respond

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Instrument counts, times and logs requests, and is the recovery boundary
// of each: a panic is logged once with its stack and answered 500 (or the
// stream cut), never the end of the process. Logs carry the method, the
// path without query (archive URL signatures stay out) and the outcome;
// never headers. The request's context carries its notes (its log
// line's error and hint; its audit event, audit.go), read when it ends:
// its event, if it made one, goes to the audit sinks.
func (m *Metrics) Instrument(log *slog.Logger, name string, h http.Handler) http.Handler {
	hm := m.forHandler(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := sinceEpoch()
		in := &instrumented{Context: r.Context(), rec: recorder{ResponseWriter: w}, notes: requestNotes{event: Event{sinks: m.sinks}}}
		rec, notes := &in.rec, &in.notes
		r = r.WithContext(in)
		defer func() {
			p := recover()
			aborted := p != nil
			if aborted && p != http.ErrAbortHandler {
				log.Error("panic serving a request", "handler", name, "path", r.URL.EscapedPath(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if rec.status == 0 {
					WriteError(rec, r, http.StatusInternalServerError, "internal error")
					aborted = false
				}
			}
			record(log, hm, r, rec, notes, start, aborted)
			if notes.event.ev != nil { // the request made an event
				m.audit(notes.event.finish(r, rec.status, rec.bytes, aborted))
			}
			if aborted {
				panic(http.ErrAbortHandler) // cut the response; net/http logs nothing for this one
			}
		}()
		h.ServeHTTP(rec, r)
	})
}

// epoch is the origin of sinceEpoch.
var epoch = time.Now()

// sinceEpoch reads the monotonic clock alone (time.Now reads the wall
// clock too): what a request's duration needs.
func sinceEpoch() time.Duration { return time.Since(epoch) }

// instrumented is what Instrument keeps of a request, in one allocation:
// its response's status and size, and its notes; and the request's
// context, which carries the notes (notesOf) with no allocation of its
// own.
type instrumented struct {
	context.Context
	rec   recorder
	notes requestNotes
}

// Value is the request's notes for notesKey, else the parent's value.
func (in *instrumented) Value(key any) any {
	if key == (notesKey{}) {
		return &in.notes
	}
	return in.Context.Value(key)
}

// recorder remembers the status and size of a response.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// requestNotes are what the prologue and the handlers note about a
// request beside its answer, carried in its context (notesOf): for its
// log line, the error answered and a hint for the operator; and its
// audit event.
type requestNotes struct {
	errMsg, hint string
	event        Event
}

type notesKey struct{}

// notesOf are the notes of the request ctx is the context of; nil for a
// request Instrument did not see (noting on it notes nothing).
func notesOf(ctx context.Context) *requestNotes {
	n, _ := ctx.Value(notesKey{}).(*requestNotes)
	return n
}

// handlerMetrics are one handler's request counters and latency
// histogram, taken from their vectors the first time each is used (so
// the series exported are those of requests served) and kept, so that a
// request pays no label lookup.
type handlerMetrics struct {
	m        *Metrics
	name     string
	latency  atomic.Pointer[prometheus.Observer]
	requests [len(methodLabels)][len(statusClasses)]atomic.Pointer[prometheus.Counter]
}

func (m *Metrics) forHandler(name string) *handlerMetrics {
	return &handlerMetrics{m: m, name: name}
}

// observe counts and times one request.
func (h *handlerMetrics) observe(method string, code int, d time.Duration) {
	mi, ci := methodIndex(method), statusIndex(code)
	c := h.requests[mi][ci].Load()
	if c == nil {
		v := h.m.requests.WithLabelValues(h.name, methodLabels[mi], statusClasses[ci])
		c = &v
		h.requests[mi][ci].Store(c)
	}
	(*c).Inc()
	o := h.latency.Load()
	if o == nil {
		v := h.m.latency.WithLabelValues(h.name)
		o = &v
		h.latency.Store(o)
	}
	(*o).Observe(d.Seconds())
}

// The request counters' method and status class labels: every method
// but GET and HEAD is OTHER; "aborted" is a response cut off.
var (
	methodLabels  = [...]string{http.MethodGet, http.MethodHead, "OTHER"}
	statusClasses = [...]string{"2xx", "3xx", "4xx", "5xx", "aborted"}
)

// methodIndex is the index in methodLabels of method's label.
func methodIndex(method string) int {
	switch method {
	case http.MethodGet:
		return 0
	case http.MethodHead:
		return 1
	}
	return 2
}

// statusIndex is the index in statusClasses of code's class.
func statusIndex(code int) int {
	if code >= 200 && code < 600 {
		return code/100 - 2
	}
	return len(statusClasses) - 1
}

// record counts and logs one finished request.
func record(log *slog.Logger, hm *handlerMetrics, r *http.Request, rec *recorder, notes *requestNotes, start time.Duration, aborted bool) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	if aborted {
		status = 0
	}
	d := sinceEpoch() - start
	hm.observe(r.Method, status, d)
	level := slog.LevelInfo
	if status >= 500 || status == 0 {
		level = slog.LevelWarn
	}
	if !log.Enabled(r.Context(), level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("handler", hm.name), slog.String("method", r.Method), slog.String("path", r.URL.EscapedPath()),
		slog.Int("status", status), slog.Int64("bytes", rec.bytes), slog.Duration("duration", d),
		slog.String("remote", remoteIP(r)),
	}
	if notes.errMsg != "" {
		attrs = append(attrs, slog.String("error", notes.errMsg))
	}
	if notes.hint != "" {
		attrs = append(attrs, slog.String("hint", notes.hint))
	}
	log.LogAttrs(r.Context(), level, "request", attrs...)
}

// Hint gives the log line of request r a hint for the operator (what to
// change); never sent to the client.
func Hint(r *http.Request, hint string) {
	if n := notesOf(r.Context()); n != nil {
		n.hint = hint
	}
}

// noteError gives the log line of request r the error it was answered
// with, unless one was given already.
func noteError(r *http.Request, msg string) {
	if n := notesOf(r.Context()); n != nil && n.errMsg == "" {
		n.errMsg = msg
	}
}

// noteFailure gives the log line of request r the error behind its
// answer, in place of the answer's message.
func noteFailure(r *http.Request, msg string) {
	if n := notesOf(r.Context()); n != nil {
		n.errMsg = msg
	}
}

func remoteIP(r *http.Request) string { return HostOnly(r.RemoteAddr) }

// HostOnly is the host of host:port, or hostport when it has no port:
// names.HostWithoutPort, kept here because every request's log line
// needs it (make walk counts the files a warm request enters).
func HostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}
