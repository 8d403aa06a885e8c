package respond

import (
	"context"
	"net/http"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/opencontainers/go-digest"
)

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
// (tickets.go), so that the downloads made with them name it too: for
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
// name (tickets.go); ok is false without tickets or for a caller with no
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
