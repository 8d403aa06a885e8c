package preflight

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Config is the part of a serve configuration the registry checks need.
type Config struct {
	// Client reaches the registries (the server's own, at start-up).
	Client *oci.Client
	// Providers are the provider mappings in order; each is checked, and
	// its Label labels its Result ("providers " + Source).
	Providers []store.ProviderMapping
	// ModuleMappings are the module mappings in order, each checked like
	// a provider mapping and labelled "modules " + ModuleLabel; with
	// more than one, ModuleLabel + " #N" (N from 1, in order).
	ModuleMappings []*repotemplate.Template
	ModuleLabel    string
	// TofuRepository, when set, is the repository of OpenTofu releases,
	// labelled "OpenTofu releases " + TofuLabel.
	TofuRepository *oci.Reference
	TofuLabel      string
	// Timeout bounds each registry call (at least a second).
	Timeout time.Duration
	// Hint, when set, says in one line what to do about a failure.
	Hint func(error) string
	// UnsampledAdvice, when set, ends the detail of a mapping checked
	// without a sample repository: how to ask for one.
	UnsampledAdvice string
}

// Samples are addresses whose repositories to look for: in every provider
// mapping that covers them (a mapping no sample is covered by is sampled
// with the one provider its include names, if any), and in the module
// template.
type Samples struct {
	Providers []names.Provider
	Modules   []ModuleAddress
}

// ModuleAddress is a module's address in a registry: HOST/NAMESPACE/NAME/SYSTEM.
type ModuleAddress struct {
	Host   string
	Module names.Module
}

// ParseModuleAddress reads HOST/NAMESPACE/NAME/SYSTEM; the host is
// lower-cased.
func ParseModuleAddress(s string) (ModuleAddress, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 4 {
		return ModuleAddress{}, fmt.Errorf("module address %q: want HOST/NAMESPACE/NAME/SYSTEM", s)
	}
	m, err := names.ParseModule(parts[1], parts[2], parts[3])
	if err != nil {
		return ModuleAddress{}, err
	}
	return ModuleAddress{Host: strings.ToLower(parts[0]), Module: m}, nil
}

func (a ModuleAddress) String() string { return a.Host + "/" + a.Module.String() }

// Registries checks every mapping of cfg, in order: the provider mappings,
// the module mappings, the repository of OpenTofu releases. Each registry
// (or layout root) is pinged once.
func Registries(ctx context.Context, cfg Config, samples Samples) []Result {
	ck := &checker{cfg: cfg, timeout: max(cfg.Timeout, time.Second), pinged: map[string]error{}}
	results := ck.providers(ctx, samples.Providers)
	for i, tpl := range cfg.ModuleMappings {
		source := cfg.ModuleLabel
		if len(cfg.ModuleMappings) > 1 {
			source = fmt.Sprintf("%s #%d", source, i+1)
		}
		results = append(results, ck.modules(ctx, tpl, source, samples.Modules)...)
	}
	if cfg.TofuRepository != nil {
		results = append(results, ck.tofuRepository(ctx, *cfg.TofuRepository))
	}
	return results
}

// checker runs the checks of one configuration, remembering each ping.
type checker struct {
	cfg     Config
	timeout time.Duration
	pinged  map[string]error // registry (or layout) → ping result
}

// exampleProvider and exampleModule stand in for a sample: their
// repository is not looked for, but the template must expand for them.
var (
	exampleProvider = names.Provider{Hostname: "example.com", Namespace: "example", Type: "example"}
	exampleModule   = ModuleAddress{Host: "example.com", Module: names.Module{Namespace: "example", Name: "example", System: "example"}}
)

// providers checks each provider mapping: its registry, and the
// repository of every sample it covers (or of the provider its include
// names); one line per sample. A sample no mapping covers gets a line
// saying so: every address asked about is answered.
func (ck *checker) providers(ctx context.Context, samples []names.Provider) []Result {
	var out []Result
	coveredByAny := make([]bool, len(samples))
	for _, m := range ck.cfg.Providers {
		res := Result{Target: "providers " + m.Label, Mapping: m.Template.String()}
		covered := coveredSamples(m, samples, coveredByAny)
		sampled := len(covered) > 0
		if !sampled {
			covered = []names.Provider{exampleProvider}
		}
		for _, sample := range covered {
			ref, err := m.Template.Expand(sample.TemplateValues())
			if err != nil {
				out = append(out, notExpanding(res, err))
				continue
			}
			out = append(out, ck.repository(ctx, res, ref, sampled, "provider "+sample.String()))
		}
	}
	for i, p := range samples {
		if !coveredByAny[i] {
			out = append(out, Result{Target: "provider " + p.String(), Status: StatusWarning,
				Detail: "no provider mapping admits this address (see the mappings' include and exclude filters): it is not served"})
		}
	}
	return out
}

// coveredSamples are the samples the mapping covers (marked in
// coveredByAny), or else the provider its include names.
func coveredSamples(m store.ProviderMapping, samples []names.Provider, coveredByAny []bool) []names.Provider {
	only := store.ProviderMappings{m}
	var out []names.Provider
	for i, p := range samples {
		if _, err := only.Map(p); err == nil {
			out = append(out, p)
			coveredByAny[i] = true
		}
	}
	if len(out) == 0 {
		for _, p := range includedProvider(m.Include) {
			if _, err := only.Map(p); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// includedProvider is the provider an include list names when it names
// exactly one, without wildcards.
func includedProvider(include []string) []names.Provider {
	if len(include) != 1 || strings.Contains(include[0], "*") {
		return nil
	}
	p, err := names.ParseProvider(include[0])
	if err != nil {
		return nil
	}
	return []names.Provider{p}
}

// modules checks one module mapping like a provider mapping: one line
// per sample, or one for the registry alone.
func (ck *checker) modules(ctx context.Context, tpl *repotemplate.Template, source string, samples []ModuleAddress) []Result {
	res := Result{Target: "modules " + source, Mapping: tpl.String()}
	sampled := len(samples) > 0
	if !sampled {
		samples = []ModuleAddress{exampleModule}
	}
	var out []Result
	for _, sample := range samples {
		ref, err := tpl.Expand(sample.Module.TemplateValues(sample.Host))
		if err != nil {
			out = append(out, notExpanding(res, err))
			continue
		}
		out = append(out, ck.repository(ctx, res, ref, sampled, "module "+sample.String()))
	}
	return out
}

// tofuRepository checks the repository of OpenTofu releases.
func (ck *checker) tofuRepository(ctx context.Context, ref oci.Reference) Result {
	res := Result{Target: "OpenTofu releases " + ck.cfg.TofuLabel, Mapping: ref.String()}
	return ck.repository(ctx, res, ref, true, "OpenTofu releases")
}

func notExpanding(res Result, err error) Result {
	res.Status, res.Detail = StatusError, "the template does not give a repository: "+err.Error()
	return res
}

// repository pings ref's registry and, when sampled, lists the versions
// of the repository itself.
func (ck *checker) repository(ctx context.Context, res Result, ref oci.Reference, sampled bool, what string) Result {
	res.Registry = ref.Registry
	pingRef := ref
	if ref.Layout {
		// A layout's "registry" is the directory the template starts with.
		pingRef.Repository = layoutRoot(strings.TrimPrefix(res.Mapping, oci.LayoutPrefix))
		res.Registry = oci.LayoutPrefix + pingRef.Repository
	} else {
		res.Credentials = orAnonymous(ck.cfg.Client.CredentialsFrom(ctx, ref.Registry))
	}
	if err := ck.ping(ctx, pingRef); err != nil {
		if ref.Layout && oci.IsNotFound(err) {
			res.Status, res.Detail = StatusWarning, "the OCI layout directory "+pingRef.Repository+" does not exist (yet)"
			return res
		}
		return ck.failed(res, err, "the registry does not answer as expected: ")
	}
	if !sampled {
		answers := "the registry answers"
		if ref.Layout {
			answers = "the layout root exists"
		}
		res.Status, res.Detail = StatusOK, ck.withAdvice(answers)
		return res
	}
	return ck.versions(ctx, res, ref, what)
}

// versions lists the versions of the sampled repository.
func (ck *checker) versions(ctx context.Context, res Result, ref oci.Reference, what string) Result {
	res.Repository = ref.Name()
	ctx, cancel := context.WithTimeout(ctx, ck.timeout)
	defer cancel()
	repo, err := ck.cfg.Client.OpenReadOnly(ctx, ref)
	var versions names.VersionList
	if err == nil {
		versions, err = oci.ListVersions(ctx, repo)
	}
	switch {
	case err == nil:
		res.Status, res.Detail = StatusOK, fmt.Sprintf("%s: %s has %s", what, ref.Name(), names.Plural(len(versions), "version"))
	case oci.IsNotFound(err):
		res.Status, res.Detail = StatusWarning, fmt.Sprintf("%s: %s does not exist (nothing pushed there yet, or another template was meant)", what, ref.Name())
	default:
		return ck.failed(res, err, what+": ")
	}
	return res
}

// ping asks each registry (or layout root) once.
func (ck *checker) ping(ctx context.Context, ref oci.Reference) error {
	key := ref.Registry
	if ref.Layout {
		key = oci.LayoutPrefix + ref.Repository
	}
	if err, done := ck.pinged[key]; done {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ck.timeout)
	defer cancel()
	err := ck.cfg.Client.Ping(ctx, ref)
	ck.pinged[key] = err
	return err
}

func (ck *checker) failed(res Result, err error, prefix string) Result {
	res.Status, res.Detail = StatusError, prefix+err.Error()
	if ck.cfg.Hint != nil {
		res.Hint = ck.cfg.Hint(err)
	}
	return res
}

func (ck *checker) withAdvice(detail string) string {
	if ck.cfg.UnsampledAdvice == "" {
		return detail
	}
	return detail + "; " + ck.cfg.UnsampledAdvice
}

func orAnonymous(s string) string {
	if s == "" {
		return "anonymous"
	}
	return s
}

// layoutRoot is the first directory of a layout path (the part a
// template cannot vary), for display.
func layoutRoot(p string) string {
	if i := strings.Index(p, "${"); i >= 0 {
		return p[:i]
	}
	return p
}
