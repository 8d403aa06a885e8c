package respond

import (
	"net/http"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// auditSinks are what takes the requests' events.
type auditSinks struct {
	sink      audit.Sink
	documents bool
}

// AuditTo hands sink an event for every artifact delivered and every
// request refused, and for every document too with documents.
func (m *Metrics) AuditTo(sink audit.Sink, documents bool) {
	m.sinks = &auditSinks{sink: sink, documents: documents}
}

// maxAuditField bounds what a client sent (user agent, path) in an event.
const maxAuditField = 512

// audit hands the sinks the event rec's request made: a download, a
// refusal, or a document (noted only when documents are audited).
func (m *Metrics) audit(r *http.Request, rec *recorder, aborted bool) {
	ev := rec.note
	switch {
	case ev.Outcome != "": // refused
	case r.Method == http.MethodHead && ev.Event == audit.EventDownload:
		return // delivers nothing (terraform asks before it downloads)
	case ev.Event != "":
		ev.Outcome = outcomeOf(rec.status, aborted)
	default:
		return
	}
	ev.Client, ev.Identity, ev.Subject, ev.Token = rec.who.Client, rec.who.Identity, rec.who.Subject, rec.who.Token
	if ev.Client == "" {
		ev.Client, ev.Identity = "anonymous", audit.IdentityNone
	}
	if ev.Event == "" {
		ev.Event = audit.EventDocument
	}
	if ev.Address == "" && rec.docAddress != "" {
		ev.Kind, ev.Address = string(rec.docKind), rec.docAddress
	}
	if ev.Address == "" && ev.Kind != string(names.KindTofu) {
		ev.Path = clip(r.URL.EscapedPath())
	}
	ev.Time = time.Now().UTC()
	ev.Remote = remoteIP(r)
	ev.UserAgent = clip(r.UserAgent())
	ev.Status = rec.status
	if ev.Status == 0 && !aborted {
		ev.Status = http.StatusOK
	}
	ev.Bytes = rec.bytes
	m.sinks.sink.Record(ev)
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

// noteBlob notes where a delivered blob comes from: the registry
// (held, with its repository), a file pull-through is downloading, or
// bytes the proxy made.
func noteBlob(ev *audit.Event, b *source.Blob) {
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
