package show

import (
	"context"
	"fmt"

	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// Provider is a provider version's catalogue document.
type Provider struct{ Page catalog.ProviderPage }

// Module is a module version's catalogue document.
type Module struct{ Page catalog.ModulePage }

// catalogue is srv's catalogue document of a; an error names what was
// looked for and where.
func catalogue(ctx context.Context, srv *proxy.Server, a Address, opts Options) (Shown, error) {
	if a.Provider != nil {
		d, err := srv.CatalogProvider(ctx, *a.Provider, a.Version)
		if err != nil {
			return nil, notShown(a, opts.ProviderTemplate, err)
		}
		d.Downloads = nil // a command keeps no audit trail
		return &Provider{Page: d}, nil
	}
	d, err := srv.CatalogModule(ctx, *a.Module, a.Version)
	if err != nil {
		return nil, notShown(a, opts.ModuleTemplate, err)
	}
	return &Module{Page: d}, nil
}

// notShown is err, naming a and the repository raw maps it to.
func notShown(a Address, raw string, err error) error {
	where := ""
	if tpl, perr := parseTemplate(a, raw); perr == nil {
		var values map[string]string
		if a.Provider != nil {
			values = a.Provider.TemplateValues()
		} else {
			values = a.Module.Module.TemplateValues(a.Module.Host)
		}
		if ref, xerr := tpl.Expand(values); xerr == nil {
			where = " (repository " + ref.String() + ")"
		}
	}
	return fmt.Errorf("show %s%s: %w", a.What(), where, err)
}

// parseTemplate parses raw as a's kind of template.
func parseTemplate(a Address, raw string) (*repotemplate.Template, error) {
	if a.Provider != nil {
		return repotemplate.ParseProviderTemplate(raw)
	}
	return repotemplate.ParseModuleTemplate(raw)
}
