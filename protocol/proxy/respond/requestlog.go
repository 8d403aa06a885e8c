package respond

import (
	"log/slog"
	"net"
	"net/http"
	"time"
)

// The request log: one line per request Instrument saw, with what its
// notes say (the error answered, a hint for the operator).

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

// HostOnly is the host of host:port, or hostport when it has no port.
func HostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}
