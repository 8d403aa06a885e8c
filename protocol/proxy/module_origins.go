package proxy

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci"
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

// mountModuleOrigins serves the modules of each origin module registry
// under its own paths.
func (s *Server) mountModuleOrigins(tpls []*oci.Template) {
	if !s.pull.Modules() {
		return
	}
	for _, host := range s.pull.ModuleOrigins() {
		m := &moduleHandlers{Responder: s.out, source: s.moduleSource(tpls, host), origin: host, paths: originModulePaths(host)}
		s.Mount("", m.paths.registry, "modules", s.Authenticate(http.HandlerFunc(m.serveRegistry)))
		s.Mount("", m.paths.archives, "module_archives", http.HandlerFunc(m.serveArchive))
	}
}

// hostname is the registry hostname of the modules a request names: the
// origin's for an origin's paths, else the request's (an invalid Host is
// answered; ok is false).
func (m *moduleHandlers) hostname(w http.ResponseWriter, r *http.Request) (string, bool) {
	if m.origin != "" {
		return m.origin, true
	}
	return m.Responder.Hostname(w, r)
}

// publicProviders are the providers.v1 URLs the public registries'
// discovery documents name: a host block replaces discovery, so it must
// name every service clients use.
var publicProviders = map[string]string{
	"registry.opentofu.org": "https://registry.opentofu.org/v1/providers/",
	"registry.terraform.io": "https://registry.terraform.io/v1/providers/",
}

// moduleOriginsSnippet is the CLI configuration sending each origin's
// module addresses to this proxy at base.
func moduleOriginsSnippet(base string, origins []string) snippet {
	var b strings.Builder
	for _, o := range origins {
		fmt.Fprintf(&b, "host %q {\n  services = {\n    \"modules.v1\"   = %q\n", o, base+ModuleOriginPath(o))
		if p, ok := publicProviders[o]; ok {
			fmt.Fprintf(&b, "    \"providers.v1\" = %q\n", p)
		} else {
			fmt.Fprintf(&b, "    # \"providers.v1\" = as https://%s/.well-known/terraform.json names it\n", o)
		}
		b.WriteString("  }\n}\n")
	}
	return snippet{ID: "module-origins", Title: "Modules of origin registries through this proxy (OpenTofu and Terraform)",
		Note: "In the CLI configuration (~/.tofurc, ~/.terraformrc, or the file TF_CLI_CONFIG_FILE names). Module addresses in your configuration stay as they are " +
			"(terraform-aws-modules/vpc/aws); versions the registry does not hold are pulled from their origin on first use. " +
			"A host block replaces the registry's service discovery: providers.v1 keeps providers coming from the registry itself. " +
			"The client sends its credentials for the registry's host to this proxy.",
		Body: b.String()}
}
