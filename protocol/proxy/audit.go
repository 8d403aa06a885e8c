package proxy

import (
	"context"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// What was served to whom (docs/audit.md): every artifact delivered and
// every request refused is an event (protocol/audit), taken by the audit
// file (Options.Audit), when the fleet shares a Redis by its download
// counts, which `oci-tofu usage --shared-cache` reads, and always by the
// page's figures of downloads and by the metrics.

// countsFlushEvery is how often a replica adds its downloads to the
// fleet's counts.
const countsFlushEvery = 5 * time.Second

// downloadCounter is a shared cache that keeps the fleet's download
// counts (sharedstate.Redis).
type downloadCounter interface {
	CountDownloads(ctx context.Context, counts []sharedstate.DownloadCount) error
}

// startAudit hands the requests' events to the audit file and the
// fleet's counts, those that are configured, and to the page.
func (s *Server) startAudit() {
	var sinks audit.Sinks
	if s.opts.Audit != nil {
		s.metrics.Registry().MustRegister(s.opts.Audit.Collectors()...)
		sinks = append(sinks, s.opts.Audit)
	}
	if dc, ok := s.opts.Shared.(downloadCounter); ok && s.opts.Shared.Shared() {
		s.counts = audit.NewCounts(func(ctx context.Context, cs []audit.Count) error {
			return dc.CountDownloads(ctx, fleetCounts(cs))
		}, countsFlushEvery, s.log)
		sinks = append(sinks, s.counts)
	}
	// The page's figures, whatever else is configured: events are
	// always made (for downloads and refusals only, documents too with
	// AuditDocuments). Signed URLs name their client for the sinks that
	// tell who downloaded what, and with client authentication for the
	// budgets their downloads spend.
	named := len(sinks) > 0 || s.clientAuth
	sinks = append(sinks, s.page.Downloads())
	s.metrics.AuditTo(sinks, s.opts.AuditDocuments, named)
}

func fleetCounts(cs []audit.Count) []sharedstate.DownloadCount {
	out := make([]sharedstate.DownloadCount, len(cs))
	for i, c := range cs {
		out[i] = sharedstate.DownloadCount{Kind: c.Kind, Address: c.Address, Version: c.Version, Client: c.Client, Count: c.Count, Last: c.Last}
	}
	return out
}
