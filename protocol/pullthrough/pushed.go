package pullthrough

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// A repository holding pushed versions (versions, and no
// PulledThroughTag) holds the organisation's own releases: pull-through
// never stores an origin's release in it, nor lists an origin's versions
// with its own, whichever path a request takes (the network mirror's
// origin addresses and their pull URLs, the registry protocol under the
// proxy's name, /v1/origins/HOST/modules/, the proxy's own modules, the
// background pulls of rules that read facts). A template without
// ${hostname} gives an origin's address and the proxy's own the same
// repository; a merge there would be dependency confusion. Every
// provider and module pull passes guard (Engine.start) before anything
// is written, and again before its first tag; the sources ask MayJoin,
// the same rule, before they list or hand out an origin's versions.
//
// Two destinations may join pushed versions, both where the name is the
// origin's by the operator's word: a repository whose name carries the
// origin's host name (a ${hostname} template, expanded for the origin's
// own address on its own path: what `oci-tofu mirror` fills with copies
// of that origin's releases), and a module address under the proxy's
// name that a --pull-through-own-modules pattern names exactly, pulled
// from the origin of own modules.

// Destination is the repository an origin's release would be stored in,
// as a request names it.
type Destination struct {
	Ref oci.Reference
	// What names the address, for messages.
	What string
	// JoinsPushed: the origin's releases may join versions pushed there.
	JoinsPushed bool
}

// probeHostname is a host name no address uses, to see whether a
// template's repository names the host.
const probeHostname = "oci-tofu-probe.invalid"

// ProviderDestination is where t's releases are stored.
func (e *Engine) ProviderDestination(t Target) (Destination, error) {
	if _, err := e.mappings.Map(t.Served); err != nil {
		return Destination{}, err
	}
	return e.ProviderDestinationIn(e.mappings[e.mappings.Index(t.Served)], t)
}

// ProviderDestinationIn is the repository of t's address in mapping m,
// as ProviderDestination: where pull-through stores when m is the
// mapping covering it, and what a later mapping merged with it holds.
// Each repository joins pushed versions by its own template's name
// only: a later mapping without ${hostname} keeps the origin out though
// the first one names the host. The proxy's own host name
// (Config.OwnHostname) names no origin's repository, though an origin
// bears it: the proxy's own providers are pushed there.
func (e *Engine) ProviderDestinationIn(m store.ProviderMapping, t Target) (Destination, error) {
	ref, err := m.Template.Expand(t.Served.TemplateValues())
	if err != nil {
		return Destination{}, err
	}
	d := Destination{Ref: ref, What: "provider " + t.Served.String()}
	if t.Via == names.ViaMirror && t.Served.Hostname == t.Origin.Hostname && !e.OwnHost(t.Served.Hostname) {
		probe := t.Served
		probe.Hostname = probeHostname
		d.JoinsPushed = namesHost(m.Template, ref, probe.TemplateValues())
	}
	return d, nil
}

// ModuleDestination is where module mod of origin registry host is
// stored when a request names ref, the repository of the module's
// address on the path it came by (the origin's, or the proxy's own).
func (e *Engine) ModuleDestination(host string, ref oci.Reference, mod names.Module) Destination {
	if e.modTpl == nil {
		return e.ModuleDestinationIn(nil, host, ref, mod)
	}
	return e.ModuleDestinationIn(e.modTpl, host, ref, mod)
}

// OwnHost reports whether host (as the registry protocols name it:
// without port) is the proxy's own host name, Config.OwnHostname,
// compared without case. Without one, no host is.
func (e *Engine) OwnHost(host string) bool {
	return e.ownHost != "" && strings.EqualFold(host, e.ownHost)
}

// ModuleDestinationIn is ModuleDestination for ref mapped through tpl:
// the first module template's (where pull-through stores) or a later
// one's merged with it, each judged by its own name.
func (e *Engine) ModuleDestinationIn(tpl store.RepositoryTemplate, host string, ref oci.Reference, mod names.Module) Destination {
	d := Destination{Ref: ref, What: "module " + host + "/" + mod.String()}
	if e.OwnModule(mod) == OwnModuleListed && host == e.ModuleOrigin() {
		d.JoinsPushed = true
		return d
	}
	if tpl != nil && !e.OwnHost(host) {
		own, err := tpl.Expand(mod.TemplateValues(host))
		d.JoinsPushed = err == nil && own.Name() == ref.Name() && namesHost(tpl, ref, mod.TemplateValues(probeHostname))
	}
	return d
}

// namesHost reports whether tpl's repository ref changes with the host
// name: expanded with probe (the address under another host) it is
// another repository.
func namesHost(tpl store.RepositoryTemplate, ref oci.Reference, probe map[string]string) bool {
	other, err := tpl.Expand(probe)
	return err == nil && other.Name() != ref.Name()
}

// MayJoin reports whether an origin's versions may be listed with what
// repos hold, d being where they would be stored (repos its repository
// and those merged with it): as guard decides, from the store's reads.
func (e *Engine) MayJoin(ctx context.Context, d Destination, repos ...*store.Repo) (bool, error) {
	if d.JoinsPushed {
		return true, nil
	}
	for _, repo := range repos {
		if pushed, err := HoldsPushedVersions(ctx, repo); pushed || err != nil {
			return false, err
		}
	}
	return true, nil
}

// guard refuses to store in d (nil: a destination the rule does not
// cover, the TofuDL repository) when it holds pushed versions, read from
// the registry now. A failed read refuses too.
func (e *Engine) guard(ctx context.Context, d *Destination) error {
	if d == nil || d.JoinsPushed {
		return nil
	}
	pushed, err := e.holdsPushed(ctx, d.Ref)
	if err != nil || !pushed {
		return err
	}
	e.log.Warn("pull-through: refused to store an origin's release in a repository holding pushed versions",
		slog.String("repository", d.Ref.Name()), slog.String("address", d.What))
	return ErrHeldAsPushed(d.What)
}

// ErrHeldAsPushed is the refusal of what (a provider or module address)
// whose repository holds pushed versions.
func ErrHeldAsPushed(what string) error {
	return &Error{Failure: FailurePushed, Msg: fmt.Sprintf("%s is held as pushed here, not pulled through: its repository holds versions somebody pushed, "+
		"and no origin's release is listed with them or stored among them (dependency confusion; docs/proxy.md, \"Pushed repositories\")", what)}
}

// holdsPushed reads ref's tags from the registry (no cache) and applies
// HoldsPushedVersions' rule; a repository that does not exist holds none.
func (e *Engine) holdsPushed(ctx context.Context, ref oci.Reference) (bool, error) {
	repo, err := e.registry.OpenReadOnly(ctx, ref)
	if err == nil {
		var tags []string
		if tags, err = oci.ListTagsBefore(ctx, repo, oci.TagSchemaTags, nil); err == nil {
			return pushedIn(tags), nil
		}
	}
	if oci.IsNotFound(err) {
		return false, nil
	}
	return false, err
}

// pushedIn reports whether tags hold a version and no PulledThroughTag.
func pushedIn(tags []string) bool {
	versions := slices.ContainsFunc(tags, func(tag string) bool {
		_, ok := names.ListedVersion(tag)
		return ok
	})
	return versions && !slices.Contains(tags, PulledThroughTag)
}

// SharedRepositories names the mappings pull-through would store into
// whose repositories an origin's addresses and the proxy's own share:
// with provider pull-through, each provider mapping whose template has
// no ${hostname} and whose filters cover more than one host; with module
// pull-through, the first module template (the one it stores into)
// without ${hostname}. guard keeps pushed versions out of them; a
// repository pull-through filled first still takes later pushes as
// pulled through, which is why serve refuses them unless told otherwise.
func SharedRepositories(o Options, providers store.ProviderMappings, moduleTpl store.RepositoryTemplate) []string {
	var out []string
	if len(o.Origins) > 0 {
		for _, m := range providers {
			if !providerTemplateNamesHost(m.Template) && coversSeveralHosts(m) {
				out = append(out, m.Label+" "+m.Template.String())
			}
		}
	}
	if len(o.Modules) > 0 && moduleTpl != nil && !moduleTemplateNamesHost(moduleTpl) {
		out = append(out, "--module-template "+moduleTpl.String())
	}
	return out
}

// providerTemplateNamesHost reports whether tpl gives two hosts' providers
// of one name two repositories.
func providerTemplateNamesHost(tpl store.RepositoryTemplate) bool {
	a := names.Provider{Hostname: "a." + probeHostname, Namespace: "oci-tofu", Type: "probe"}
	b := a
	b.Hostname = "b." + probeHostname
	ref, err := tpl.Expand(a.TemplateValues())
	return err == nil && namesHost(tpl, ref, b.TemplateValues())
}

// moduleTemplateNamesHost is providerTemplateNamesHost for modules.
func moduleTemplateNamesHost(tpl store.RepositoryTemplate) bool {
	mod := names.Module{Namespace: "oci-tofu", Name: "probe", System: "probe"}
	ref, err := tpl.Expand(mod.TemplateValues("a." + probeHostname))
	return err == nil && namesHost(tpl, ref, mod.TemplateValues("b."+probeHostname))
}

// coversSeveralHosts reports whether m's filters may cover addresses of
// more than one host: unless every include pattern names one and the
// same host, literally.
func coversSeveralHosts(m store.ProviderMapping) bool {
	host := ""
	for _, pat := range m.Include {
		h, _, _ := strings.Cut(pat, "/")
		if strings.ContainsAny(h, `*?[\`) || host != "" && h != host {
			return true
		}
		host = h
	}
	return host == ""
}

// CheckShared refuses pull-through (o, nil: off) into repositories an
// origin's addresses and the proxy's own share (templates without
// ${hostname}: SharedRepositories; moduleTpls[0] is the one modules are
// stored into), unless accept (--pull-through-shared-repositories),
// which is warned of.
func CheckShared(o *Options, providers store.ProviderMappings, moduleTpls []*repotemplate.Template, accept bool, logger *slog.Logger) error {
	if o == nil {
		return nil
	}
	var modules store.RepositoryTemplate
	if len(moduleTpls) > 0 {
		modules = moduleTpls[0]
	}
	shared := SharedRepositories(*o, providers, modules)
	switch {
	case len(shared) == 0:
		return nil
	case accept:
		logger.Warn("pull-through stores into repositories the origins' addresses share with the proxy's own (no ${hostname} in the template): "+
			"a repository pull-through fills first takes later pushes as pulled through (docs/proxy.md, \"Pushed repositories\")", "mappings", shared)
		return nil
	}
	return fmt.Errorf("pull-through would store into repositories the origins' addresses share with the proxy's own: %s has no ${hostname}, "+
		"so ORIGIN/NAMESPACE/TYPE and PROXY/NAMESPACE/TYPE (and modules alike) name one repository, where an origin's release would sit with privately pushed ones. "+
		"Put ${hostname} in the template (ghcr.io/acme/providers/${hostname}/${namespace}/${type}, ghcr.io/acme/modules/${hostname}/${namespace}/${name}/${system}), "+
		"limit the provider mapping's --include to one origin host, or accept the sharing with --pull-through-shared-repositories (docs/proxy.md, \"Pushed repositories\")",
		strings.Join(shared, ", "))
}
