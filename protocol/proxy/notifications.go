package proxy

import (
	"context"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/notify"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// Notifications configure the endpoint registries notify of pushes and
// deletes (protocol/notify, docs/notifications.md).
type Notifications struct {
	// Secret is what a notification's Authorization header carries
	// (notify.Options.Secret).
	Secret []byte
}

// notifications is the receiver and the count of batches it applied,
// which keys the document cache (respond.Options.Notified).
type notifications struct {
	receiver *notify.Receiver
	applied  atomic.Uint64
	stop     context.CancelFunc
}

// notifyChannel is the Redis channel the replicas tell each other
// their batches on.
const notifyChannel = "notify:registry"

// setUpNotifications makes the receiver (before the responder, which
// keys documents by its batches) when notifications are configured.
func (s *Server) setUpNotifications() error {
	o := s.opts.Notifications
	if o == nil {
		return nil
	}
	n := &notifications{}
	opts := notify.Options{Secret: o.Secret, Scope: s.notifiedScope, Logger: s.log,
		Apply: func(names []string, all bool) {
			s.store.Invalidate(names, all)
			n.applied.Add(1) // after the store's: a document built anew reads afresh
		}}
	if r, ok := s.opts.Shared.(*sharedstate.Redis); ok {
		opts.Fleet = r.Channel(notifyChannel)
	}
	rcv, err := notify.New(opts)
	if err != nil {
		return err
	}
	n.receiver = rcv
	s.notifications = n
	return s.metrics.Registry().Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "oci_tofu_proxy_notification_batches_total",
		Help: "Batches of registry notifications applied: each dropped what the proxy cached of the repositories named.",
	}, func() float64 { return float64(rcv.Batches()) }))
}

// startNotifications mounts the endpoint and starts its batches, until
// Close.
func (s *Server) startNotifications() {
	n := s.notifications
	if n == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.stop = cancel
	n.receiver.Start(ctx)
	s.mux.Handle(notify.Path, s.instrument("notifications", n.receiver))
}

// notifiedCounter is what keys documents by the batches applied; nil
// without notifications.
func (s *Server) notifiedCounter() *atomic.Uint64 {
	if s.notifications == nil {
		return nil
	}
	return &s.notifications.applied
}

// notifiedScope names the repositories of the proxy's registries a
// notification names: those its provider and module templates match (on
// the host named, or without one on each template's own registry), and
// the OpenTofu releases' repository.
func (s *Server) notifiedScope(host, repository string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(ref oci.Reference) {
		if n := ref.Name(); !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, tpl := range s.notifiedTemplates() {
		tplHost, _ := tpl.ListPrefix()
		if tplHost == oci.LayoutPrefix {
			continue
		}
		h := host
		if h == "" {
			h = tplHost
		}
		ref := oci.Reference{Registry: h, Repository: repository}
		if _, ok := tpl.Match(ref); ok && h != "" {
			add(ref)
		}
	}
	if t := s.opts.TofuRepository; t != nil && !t.Layout && t.Repository == repository && (host == "" || host == t.Registry) {
		add(oci.Reference{Registry: t.Registry, Repository: t.Repository})
	}
	return out
}

// notifiedTemplates are the provider mappings' templates and the module
// templates.
func (s *Server) notifiedTemplates() []*repotemplate.Template {
	var tpls []*repotemplate.Template
	for _, mp := range s.mappings {
		if tpl, ok := mp.Template.(*repotemplate.Template); ok {
			tpls = append(tpls, tpl)
		}
	}
	return append(tpls, s.opts.ModuleMappings...)
}
