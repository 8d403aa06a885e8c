package proxy

import (
	"net/http"

	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/providers"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Mounting: each protocol family's handlers, reading from the source
// stack sources.go composes, under their paths.

// mountProviders adds the network mirror, the registry protocol
// (providers.v1) and the archive downloads, and with pull-through the
// files of releases being pulled.
func (s *Server) mountProviders(mappings store.ProviderMappings) {
	o := s.opts
	h := providers.New(s.out, s.providerSource(mappings), o.Signer, cache.Options{Name: "generated_checksums", FailureTTL: o.Store.FailureTTL,
		MaxEntries: o.Store.CacheEntries, MaxCost: budgetOf(o).generated, EntryCost: store.EntryCost, Timeout: o.Store.Timeout, Observe: s.metrics.ObserveCache})
	s.providers = h
	if s.pull.Providers() {
		s.Mount("", providers.PullPrefix, "pull", http.HandlerFunc(h.ServePull))
	}
	s.Mount("", providers.MirrorPrefix, "mirror", s.Authenticate(http.HandlerFunc(h.ServeMirror)))
	s.Mount("providers.v1", providers.ProvidersPath, "providers", s.Authenticate(http.HandlerFunc(h.ServeRegistry)))
	s.Mount("", providers.ArchivePrefix, "archives", http.HandlerFunc(h.ServeArchive))
}
