package respond

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// Instrument counts, times and logs requests, and is the recovery boundary
// of each: a panic is logged once with its stack and answered 500 (or the
// stream cut), never the end of the process. Logs carry the method, the
// path without query (archive URL signatures stay out) and the outcome;
// never headers. The request's context carries its notes (the log line's
// error and hint, requestlog.go; its audit event, audit.go), read when
// it ends.
func (m *Metrics) Instrument(log *slog.Logger, name string, h http.Handler) http.Handler {
	hm := m.forHandler(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := sinceEpoch()
		in := &instrumented{rec: recorder{ResponseWriter: w}, notes: requestNotes{event: Event{sinks: m.sinks}}}
		rec, notes := &in.rec, &in.notes
		r = r.WithContext(context.WithValue(r.Context(), notesKey{}, notes))
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
			if ev := notes.event.finish(r, rec.status, rec.bytes, aborted); ev != nil {
				m.outcomes.count(ev)
				m.sinks.sink.Record(ev)
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
// its response's status and size, and its notes.
type instrumented struct {
	rec   recorder
	notes requestNotes
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
