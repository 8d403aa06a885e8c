package respond

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// A request's record: Instrument is where each request begins and ends.
// What the prologue and the handlers note on the way (its log line's
// error and hint; its audit event) travels in its context and is read
// when it ends: the line is logged, the request counted (metrics.go), its
// event, if it made one, handed to the audit sinks.

// Instrument counts, times and logs requests, and is the recovery boundary
// of each: a panic is logged once with its stack and answered 500 (or the
// stream cut), never the end of the process. Logs carry the method, the
// path without query (archive URL signatures stay out) and the outcome;
// never headers. The request's context carries its notes (its log
// line's error and hint; its audit event, below), read when it ends:
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
	// The handler itself, not log.LogAttrs: the line has no use for the
	// caller's program counter, which costs a stack walk per request.
	line := slog.NewRecord(time.Now(), level, "request", 0)
	line.AddAttrs(attrs...)
	log.Handler().Handle(r.Context(), line) //nolint:errcheck // as slog.Logger does
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

// The audit trail (protocol/audit): each request Instrument sees
// carries in its context the audit event it is making (EventOf), which
// the prologue and the handlers note on as they learn who asked, what
// was asked and what was decided; when the request ends, Instrument
// hands it to the sinks. This file is the only one that fills events.

// auditSinks are what takes the requests' events.
type auditSinks struct {
	sink      audit.Sink
	documents bool
	tickets   bool
}

// AuditTo hands sink an event for every artifact delivered and every
// request refused, and for every document too with documents. With
// tickets, the signed URLs a named client is handed carry its name
// (access.go), so that the downloads made with them name it too: for
// the sinks that tell who downloaded what (the audit file, the fleet's
// counts); the page, which shows downloads only without client
// authentication, needs none.
func (m *Metrics) AuditTo(sink audit.Sink, documents, tickets bool) {
	m.sinks = &auditSinks{sink: sink, documents: documents, tickets: tickets}
}

// audit hands the sinks ev (nil: none), counted.
func (m *Metrics) audit(ev *audit.Event) {
	if ev != nil {
		m.outcomes.count(ev)
		m.sinks.sink.Record(ev)
	}
}

// Event is the audit event a request is making: who asked, and the
// event, made once the request turns out to be one the sinks take (a
// download, a refusal; a document with AuditDocuments). Its methods do
// nothing on a nil Event: a request Instrument did not see, or one
// nothing takes events of.
type Event struct {
	sinks  *auditSinks
	caller audit.Caller
	ev     *audit.Event
	// docKind and docAddress are what a document request names.
	docKind    names.Kind
	docAddress string
}

// EventOf is the audit event of the request ctx is the context of; nil
// when it makes none.
func EventOf(ctx context.Context) *Event {
	if n := notesOf(ctx); n != nil && n.event.sinks != nil {
		return &n.event
	}
	return nil
}

// Identify notes who the request came from.
func (e *Event) Identify(c audit.Caller) {
	if e != nil {
		e.caller = c
	}
}

// Caller is who the request came from, as Identify noted it
// (audit.Anonymous when no one was).
func (e *Event) Caller() audit.Caller {
	if e == nil || e.caller.Client == "" {
		return audit.Anonymous
	}
	return e.caller
}

// made is the event, made now if need be.
func (e *Event) made() *audit.Event {
	if e.ev == nil {
		e.ev = new(audit.Event)
	}
	return e.ev
}

// Artifact is what a download names.
type Artifact struct {
	Kind                             names.Kind
	Address, Version, Platform, File string
}

// Serving notes that the request downloads a; the delivery notes the
// digest, repository and source (Responder.Deliver).
func (e *Event) Serving(a Artifact) {
	if e == nil {
		return
	}
	ev := e.made()
	ev.Event, ev.Kind, ev.Address, ev.Version, ev.Platform, ev.File = audit.EventDownload, string(a.Kind), a.Address, a.Version, a.Platform, a.File
}

// Refused notes that the request was refused (outcome: an audit
// outcome), saying why; kind and address when known.
func (e *Event) Refused(outcome string, kind names.Kind, address, rule, reason string) {
	if e == nil {
		return
	}
	ev := e.made()
	ev.Outcome, ev.Rule, ev.Reason = outcome, rule, reason
	if kind != "" {
		ev.Kind = string(kind)
	}
	if address != "" {
		ev.Address = address
	}
}

// document notes that the request asks for a document of kind at
// address: the address of its event if it is refused, or when documents
// are audited.
func (e *Event) document(kind names.Kind, address string) {
	if e == nil {
		return
	}
	e.docKind, e.docAddress = kind, address
	if !e.sinks.documents {
		return // no event unless the request is refused: nothing made
	}
	if ev := e.made(); ev.Event == "" {
		ev.Event = audit.EventDocument
	}
}

// blob notes where a delivered blob comes from, when the request makes
// an event: the registry (held, with its repository), a file
// pull-through is downloading, or bytes the proxy made.
func (e *Event) blob(b *source.Blob) {
	if e == nil || e.ev == nil {
		return
	}
	ev := e.ev
	switch {
	case b.Pulling != nil:
		ev.Source, ev.Digest = audit.SourcePulled, b.Pulling.Digest()
	case b.Repo != nil:
		ev.Source, ev.Digest, ev.Repository = audit.SourceHeld, b.Layer.Digest.String(), b.Repo.Name()
	default:
		ev.Digest = digest.FromBytes(b.Data).String()
	}
	if b.From != nil && b.From.Repo != nil && ev.Repository == "" {
		ev.Repository = b.From.Repo.Name()
	}
}

// ticketed is the caller the signed URLs of an answer to the request
// name (access.go); ok is false without tickets or for a caller with no
// name.
func (e *Event) ticketed() (_ audit.Caller, ok bool) {
	if e == nil || !e.sinks.tickets || e.caller.Client == "" {
		return audit.Caller{}, false
	}
	return e.caller, true
}

// maxAuditField bounds what a client sent (user agent, path) in an event.
const maxAuditField = 512

// finish is the event request r made, for the sinks, once its answer
// (status, bytes; aborted: cut off) is written: a download, a refusal,
// or a document (noted only when documents are audited); nil for none.
// It is called only for a request that made an event.
func (e *Event) finish(r *http.Request, status int, bytes int64, aborted bool) *audit.Event {
	ev := e.ev
	switch {
	case ev.Outcome != "": // refused
	case r.Method == http.MethodHead && ev.Event == audit.EventDownload:
		return nil // delivers nothing (terraform asks before it downloads)
	case ev.Event != "":
		ev.Outcome = outcomeOf(status, aborted)
	default:
		return nil
	}
	ev.From(e.caller)
	if ev.Client == "" {
		ev.From(audit.Anonymous)
	}
	if ev.Event == "" {
		ev.Event = audit.EventDocument
	}
	if ev.Address == "" && e.docAddress != "" {
		ev.Kind, ev.Address = string(e.docKind), e.docAddress
	}
	if ev.Address == "" && ev.Kind != string(names.KindTofu) {
		ev.Path = clip(r.URL.EscapedPath())
	}
	ev.Time = time.Now().UTC()
	ev.Remote = remoteIP(r)
	ev.UserAgent = clip(r.UserAgent())
	ev.Status = status
	if ev.Status == 0 && !aborted {
		ev.Status = http.StatusOK
	}
	ev.Bytes = bytes
	return ev
}

// outcomeOf is the audit outcome of a request that was not refused.
func outcomeOf(status int, aborted bool) string {
	switch {
	case aborted:
		return audit.OutcomeAborted
	case status == 0 || status >= 200 && status < 300:
		return audit.OutcomeDelivered
	case status >= 300 && status < 400:
		return audit.OutcomeRedirected
	}
	return audit.OutcomeFailed
}

// clip bounds a string a client sent.
func clip(s string) string {
	if len(s) > maxAuditField {
		return s[:maxAuditField]
	}
	return s
}
