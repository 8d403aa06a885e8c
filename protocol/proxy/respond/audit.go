package respond

import (
	"net/http"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// AuditTo writes an audit event for every artifact delivered and every
// request refused to l, and for every document too with documents.
func (m *Metrics) AuditTo(l *audit.Log, documents bool) {
	m.auditLog, m.auditDocuments = l, documents
	m.reg.MustRegister(l.Collectors()...)
}

// maxAuditField bounds what a client sent (user agent, path) in an event.
const maxAuditField = 512

// audit writes the event rec's request made, if it is one the trail
// keeps: a download, a refusal, or with auditDocuments a document.
func (m *Metrics) audit(r *http.Request, rec *recorder, aborted bool) {
	ev := rec.note
	switch {
	case ev.Outcome != "": // refused
	case ev.Event == audit.EventDownload && rec.noted:
		ev.Outcome = outcomeOf(rec.status, aborted)
	case ev.Event == audit.EventDocument && m.auditDocuments:
		ev.Outcome = outcomeOf(rec.status, aborted)
	default:
		return
	}
	if ev.Event == "" {
		ev.Event = audit.EventDocument
		if ev.Address == "" {
			ev.Path = clip(r.URL.EscapedPath())
		}
	}
	ev.Time = time.Now().UTC()
	ev.Remote = remoteIP(r)
	ev.UserAgent = clip(r.UserAgent())
	ev.Status = rec.status
	if ev.Status == 0 && !aborted {
		ev.Status = http.StatusOK
	}
	ev.Bytes = rec.bytes
	m.auditLog.Record(ev)
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
