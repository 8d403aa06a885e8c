package modules

import (
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Module pull-through from several origin registries (docs/modules.md,
// "Pull-through"): besides modules.v1 for its own hostname, the proxy
// serves one modules.v1 per origin module registry, at
// /v1/origins/ORIGIN/modules/, with its archives at
// /v1/origins/ORIGIN/module-archives/. A client reaches it through a
// `host "ORIGIN"` block of its CLI configuration naming that URL as the
// origin's modules.v1 (docs/reference.md §8): the module addresses of its
// configuration keep naming the origin (`terraform-aws-modules/vpc/aws`
// is still registry.opentofu.org's or registry.terraform.io's), and the
// proxy answers them as ORIGIN/NAMESPACE/NAME/SYSTEM — the module
// template expanded with the origin's hostname as ${hostname}, the
// policy file matching the origin's address — pulling what the
// registry does not hold from that origin alone.

// ModuleOriginsPrefix is where the per-origin module registries are
// served.
const ModuleOriginsPrefix = "/v1/origins/"

// ModuleOriginPath is the modules.v1 URL path of origin host's modules.
func ModuleOriginPath(host string) string { return ModuleOriginsPrefix + host + "/modules/" }

// modulePaths are where a module registry's endpoints are served: the
// modules.v1 base and the archive downloads.
type modulePaths struct {
	registry, archives string
}

// ownModulePaths serve the modules addressed under the proxy's hostname.
var ownModulePaths = modulePaths{registry: ModulesPath, archives: ModuleArchivePrefix}

// originModulePaths serve the modules of origin host.
func originModulePaths(host string) modulePaths {
	return modulePaths{registry: ModuleOriginPath(host), archives: ModuleOriginsPrefix + host + "/module-archives/"}
}

// ForOrigin is the module handlers of origin host's modules, answering
// with out from src, under the origin's paths.
func ForOrigin(out *respond.Responder, src source.Modules, host string) *Handlers {
	return &Handlers{Responder: out, source: src, origin: host, paths: originModulePaths(host)}
}

// Paths are where the handlers serve: the modules.v1 base and the
// archive downloads.
func (m *Handlers) Paths() (registry, archives string) { return m.paths.registry, m.paths.archives }
