package proxy

import (
	"fmt"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// The held-address index on serve (docs/catalogue.md, "The held-address
// index"): the catalogue reads it beside the registry's catalog, repairs
// it where the catalog lists, and pull-through records what it stores in
// it (oci.Client.RecordHeld, through the client's Options.HeldIndex).

// checkHeldIndex refuses mappings on another registry than the client's
// held-address index: pull-through would push there with credentials the
// index's registry must not see sent elsewhere, and the catalogue reads
// the index for its own registry only.
func (s *Server) checkHeldIndex(client *oci.Client) error {
	idx, ok := client.HeldIndex()
	if !ok {
		return nil
	}
	var tpls []*repotemplate.Template
	for _, mp := range s.mappings {
		if tpl, ok := mp.Template.(*repotemplate.Template); ok {
			tpls = append(tpls, tpl)
		}
	}
	for _, tpl := range append(tpls, s.opts.ModuleMappings...) {
		if host, _ := tpl.ListPrefix(); host != idx.Registry {
			return fmt.Errorf("the held-address index %s (--catalog-repository) is on %s, and the repository template %s maps repositories elsewhere: the index must be on the registry of what is served", idx.Name(), idx.Registry, tpl)
		}
	}
	if tofu := s.opts.TofuRepository; tofu != nil {
		return client.CheckHeldIndex(*tofu)
	}
	return nil
}
