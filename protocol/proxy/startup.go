package proxy

import (
	"context"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
)

// startShared serves the shared state's metrics and starts the pull-through
// engine, when configured.
func (s *Server) startShared() error {
	if c, ok := s.opts.Shared.(prometheus.Collector); ok {
		if err := s.metrics.Registry().Register(c); err != nil {
			return err
		}
	}
	if s.opts.PullThrough == nil {
		return nil
	}
	var pullModules *repotemplate.Template // pull-through stores modules into the first mapping
	if len(s.opts.ModuleMappings) > 0 {
		pullModules = s.opts.ModuleMappings[0]
	}
	e, err := pullthrough.New(pullthrough.Config{Options: *s.opts.PullThrough, Mappings: s.mappings, TofuRepository: s.opts.TofuRepository, ModuleTemplate: pullModules,
		Registry: s.client, Metrics: s.metrics.Registry(), ObserveCache: s.metrics.ObserveCache, CacheEntries: s.opts.Store.CacheEntries,
		CacheBytes: budgetOf(s.opts).origins, Logger: s.log, Shared: s.opts.Shared, OwnHostname: ownHostname(s.opts),
		Events: s.emitter(), EventSource: s.eventSourceOf()})
	if err != nil {
		return err
	}
	s.pull = e
	return nil
}

// ownHostname is the proxy's own host name, as the operator gave it:
// RegistryHostname, else PublicURL's host without port, else "" (the
// proxy does not know it: a request's Host is the client's to choose).
// Pull-through under the proxy's own name stores only under it.
func ownHostname(o Options) string {
	if o.RegistryHostname != "" || o.PublicURL == "" {
		return o.RegistryHostname
	}
	u, err := url.Parse(o.PublicURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
}

// CheckPullThrough makes sure the registry lets the proxy push where
// pull-through stores releases (pullthrough.Engine.CheckPush); nil
// without pull-through.
func (s *Server) CheckPullThrough(ctx context.Context) error {
	if s.pull == nil {
		return nil
	}
	return s.pull.CheckPush(ctx)
}
