package respond

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"
)

// Instrument counts, times and logs requests, and is the recovery boundary
// of each: a panic is logged once with its stack and answered 500 (or the
// stream cut), never the end of the process. Logs carry the method, the
// path without query (archive URL signatures stay out) and the outcome;
// never headers.
func (m *Metrics) Instrument(log *slog.Logger, name string, h http.Handler) http.Handler {
	hm := m.forHandler(name)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := sinceEpoch()
		rec := &recorder{ResponseWriter: w}
		defer func() {
			p := recover()
			aborted := p != nil
			if aborted && p != http.ErrAbortHandler {
				log.Error("panic serving a request", "handler", name, "path", r.URL.EscapedPath(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if rec.status == 0 {
					WriteError(rec, http.StatusInternalServerError, "internal error")
					aborted = false
				}
			}
			record(log, hm, r, rec, start, aborted)
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

// record counts and logs one finished request.
func record(log *slog.Logger, hm *handlerMetrics, r *http.Request, rec *recorder, start time.Duration, aborted bool) {
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
	if rec.errMsg != "" {
		attrs = append(attrs, slog.String("error", rec.errMsg))
	}
	if rec.hint != "" {
		attrs = append(attrs, slog.String("hint", rec.hint))
	}
	log.LogAttrs(r.Context(), level, "request", attrs...)
}

func remoteIP(r *http.Request) string { return HostOnly(r.RemoteAddr) }

// HostOnly is the host of host:port, or hostport when it has no port.
func HostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// recorder remembers the status and size of a response.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
	errMsg string
	hint   string
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

// Hint gives the log line of the request w answers a hint for the
// operator (what to change); never sent to the client.
func Hint(w http.ResponseWriter, hint string) {
	if rec, ok := w.(*recorder); ok {
		rec.hint = hint
	}
}
