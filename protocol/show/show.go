package show

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Options are what show reads an argument with; the flags of the same
// names give them.
type Options struct {
	// Client reaches the registry.
	Client *oci.Client
	// ProviderTemplate and ModuleTemplate map addresses to repositories
	// (--provider-template, --module-template); with neither, the
	// argument is a REPOSITORY[:TAG|@DIGEST] holding a module package.
	ProviderTemplate, ModuleTemplate string
	// Policy is the policy file the versions are judged by (--policy,
	// "": none); VulnDB the vulnerability database the SBOMs are matched
	// against (--vuln-db, "": none).
	Policy, VulnDB string
	// Logger gets the warnings of the reads (nil: none).
	Logger *slog.Logger
}

// Shown is what show prints.
type Shown interface {
	Report(rep *report.Reporter) error
}

// Show reads what arg names: with a template, the catalogue's document
// of the address arg (ADDRESS[@VERSION]); without, the interface of the
// module package arg (REPOSITORY[:TAG|@DIGEST]).
func Show(ctx context.Context, arg string, opts Options) (Shown, error) {
	if opts.ProviderTemplate == "" && opts.ModuleTemplate == "" {
		return showRepository(ctx, arg, opts)
	}
	a, err := ParseAddress(arg, opts.ProviderTemplate == "")
	if err != nil {
		return nil, err
	}
	if err := a.mapped(opts); err != nil {
		return nil, err
	}
	srv, err := NewServer(opts)
	if err != nil {
		return nil, err
	}
	defer srv.Close(context.WithoutCancel(ctx))
	return catalogue(ctx, srv, a, opts)
}

// showRepository is the interface of the module package ref names.
func showRepository(ctx context.Context, arg string, opts Options) (Shown, error) {
	if opts.Policy != "" || opts.VulnDB != "" {
		return nil, errors.New("--policy and --vuln-db judge addresses: give --provider-template or --module-template and an ADDRESS")
	}
	ref, err := oci.ParseReference(arg)
	if err != nil {
		return nil, err
	}
	repo, err := opts.Client.OpenReadOnly(ctx, ref)
	if err != nil {
		return nil, err
	}
	return moduledoc.Show(ctx, repo, ref)
}

// mapped is nil when opts has the template of a's kind.
func (a Address) mapped(opts Options) error {
	if a.Provider != nil && opts.ProviderTemplate == "" {
		return fmt.Errorf("%s is a provider address: give --provider-template (a module's is [HOST/]NAMESPACE/NAME/SYSTEM)", a.What())
	}
	if a.Module != nil && opts.ModuleTemplate == "" {
		return fmt.Errorf("%s is a module address: give --module-template", a.What())
	}
	return nil
}

// NewServer is a server that does not listen, over the templates of
// opts, judging by its policy and database as serve would.
func NewServer(opts Options) (*proxy.Server, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	so := proxy.Options{Client: opts.Client, Logger: logger}
	if opts.ProviderTemplate != "" {
		tpl, err := repotemplate.ParseProviderTemplate(opts.ProviderTemplate)
		if err != nil {
			return nil, fmt.Errorf("--provider-template: %w", err)
		}
		so.ProviderMappings = []store.ProviderMapping{{Template: tpl, Label: "--provider-template"}}
	}
	if opts.ModuleTemplate != "" {
		tpl, err := repotemplate.ParseModuleTemplate(opts.ModuleTemplate)
		if err != nil {
			return nil, fmt.Errorf("--module-template: %w", err)
		}
		so.ModuleMappings = []*repotemplate.Template{tpl}
	}
	if opts.Policy != "" {
		p, err := policy.Load(opts.Policy)
		if err != nil {
			return nil, fmt.Errorf("--policy: %w", err)
		}
		so.Policy = policy.NewLive(p)
	}
	if opts.VulnDB != "" {
		db, err := vulns.OpenLive(opts.VulnDB, 0, logger)
		if err != nil {
			return nil, fmt.Errorf("--vuln-db: %w", err)
		}
		so.VulnDB = db
	}
	return proxy.New(so)
}
