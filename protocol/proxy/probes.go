package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/health"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// probeSentinel stands in for the placeholders of a repository template
// when the registry it names is looked for: a registry (or layout) whose
// name depends on a placeholder is not probed.
const probeSentinel = "readiness-probe"

// newProbes makes the server's readiness and liveness probes: readiness
// pings every registry the server reads (health.Options.Interval apart at
// most).
func (s *Server) newProbes() *health.Probes {
	targets := s.probeTargets()
	return health.New(health.Options{
		Registries: func(ctx context.Context) error { return s.pingAll(ctx, targets) },
		Interval:   s.opts.ReadyInterval,
		Logger:     s.log,
	})
}

// probeTargets are the registries (and OCI layouts) served from, one
// reference each.
func (s *Server) probeTargets() []oci.Reference {
	var refs []oci.Reference
	seen := map[string]bool{}
	add := func(ref oci.Reference, err error) {
		key := ref.Registry
		if ref.Layout {
			key = oci.LayoutPrefix + ref.Repository
		}
		if err != nil || seen[key] || strings.Contains(key, probeSentinel) {
			return
		}
		seen[key] = true
		refs = append(refs, ref)
	}
	values := map[string]string{"hostname": probeSentinel + ".invalid", "namespace": probeSentinel, "type": probeSentinel,
		"name": probeSentinel, "system": probeSentinel}
	for _, m := range s.mappings {
		add(m.Template.Expand(values))
	}
	for _, t := range s.opts.ModuleMappings {
		add(t.Expand(values))
	}
	if s.opts.TofuRepository != nil {
		add(*s.opts.TofuRepository, nil)
	}
	return refs
}

// pingAll pings the targets at once; the error names each that failed.
func (s *Server) pingAll(ctx context.Context, targets []oci.Reference) error {
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, ref := range targets {
		wg.Go(func() {
			if err := s.client.Ping(ctx, ref); err != nil {
				name := ref.Registry
				if ref.Layout {
					name = oci.LayoutPrefix + ref.Repository
				}
				errs[i] = fmt.Errorf("registry %s: %w", name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// routeProbes serves /readyz and /livez.
func (s *Server) routeProbes() {
	ready, live := s.probes.ReadyHandler(), s.probes.LiveHandler()
	s.mux.Handle("/readyz", s.instrument("readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if respond.AllowRead(w, r) {
			ready.ServeHTTP(w, r)
		}
	})))
	s.mux.Handle("/livez", s.instrument("livez", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if respond.AllowRead(w, r) {
			live.ServeHTTP(w, r)
		}
	})))
}

// Drain makes /readyz fail from now on, before the server shuts down, so
// that load balancers stop sending it requests while it still answers
// them.
func (s *Server) Drain() { s.probes.Drain() }

// Probes are the server's readiness and liveness probes: callers add the
// conditions readiness depends on besides the registries (serve: the TLS
// certificate served being valid). A policy that failed to reload is
// not one: the last good policy stays in force (docs/proxy.md, "Probes").
func (s *Server) Probes() *health.Probes { return s.probes }
