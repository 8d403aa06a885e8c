package tfconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// module is one module directory, its files combined as OpenTofu's
// NewModule combines them: one required_providers block, override files
// merged over primary files, duplicates refused.
type module struct {
	dir       string
	required  map[string]*requiredProvider
	providers map[string]*providerConfig
	resources map[string]*resource
	calls     map[string]*moduleCall
	imports   []*importBlock
	// testProviders are the provider blocks of the root module's test files.
	testProviders []*providerConfig
}

// loadModule reads and combines the configuration files of dir.
func loadModule(p *hclparse.Parser, dir string, c Client, isRoot bool) (*module, hcl.Diagnostics) {
	mf, err := listModuleFiles(dir, c, isRoot)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Failed to read module directory",
			Detail:   fmt.Sprintf("Module directory %s does not exist or cannot be read.", dir),
		}}
	}
	primary, diags := decodeFiles(p, mf.primary, false, c)
	override, d := decodeFiles(p, mf.override, true, c)
	diags = append(diags, d...)
	m := &module{
		dir:       dir,
		required:  map[string]*requiredProvider{},
		providers: map[string]*providerConfig{},
		resources: map[string]*resource{},
		calls:     map[string]*moduleCall{},
	}
	diags = append(diags, m.setRequiredProviders(primary, override)...)
	for _, f := range primary {
		diags = append(diags, m.appendFile(f)...)
	}
	for _, f := range override {
		diags = append(diags, m.mergeFile(f)...)
	}
	for _, t := range mf.tests {
		ps, d := decodeTestFile(p, t, c)
		diags = append(diags, d...)
		m.testProviders = append(m.testProviders, ps...)
	}
	return m, diags
}

func decodeFiles(p *hclparse.Parser, paths []string, override bool, c Client) ([]*file, hcl.Diagnostics) {
	var files []*file
	var diags hcl.Diagnostics
	for _, path := range paths {
		hf, d := parseFile(p, path)
		diags = append(diags, d...)
		if hf == nil || d.HasErrors() {
			continue
		}
		f, d := decodeFile(hf.Body, override, c)
		diags = append(diags, d...)
		files = append(files, f)
	}
	return files, diags
}

// setRequiredProviders takes the one required_providers block the primary
// files may hold (a second is an error), then lets override files replace
// whole entries.
func (m *module) setRequiredProviders(primary, override []*file) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var first *requiredProviders
	for _, f := range primary {
		for _, rp := range f.requiredProviders {
			if first != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate required providers configuration",
					Detail:   fmt.Sprintf("A module may have only one required providers configuration. The required providers were previously configured at %s.", first.rng),
					Subject:  rp.rng.Ptr(),
				})
				continue
			}
			first = rp
			for name, e := range rp.entries {
				m.required[name] = e
			}
		}
	}
	for _, f := range override {
		for _, rp := range f.requiredProviders {
			for name, e := range rp.entries {
				m.required[name] = e
			}
		}
	}
	return diags
}

func (m *module) appendFile(f *file) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, p := range f.providers {
		if prev, dup := m.providers[p.key()]; dup {
			detail := fmt.Sprintf("A default (non-aliased) provider configuration for %q was already given at %s. If multiple configurations are required, set the \"alias\" argument for alternative configurations.", prev.name, prev.rng)
			if prev.alias != "" {
				detail = fmt.Sprintf("A provider configuration for %q with alias %q was already given at %s. Each configuration for the same provider must have a distinct alias.", prev.name, prev.alias, prev.rng)
			}
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Duplicate provider configuration", Detail: detail, Subject: p.rng.Ptr()})
			continue
		}
		m.providers[p.key()] = p
	}
	for _, mc := range f.calls {
		if prev, dup := m.calls[mc.name]; dup {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate module call",
				Detail:   fmt.Sprintf("A module call named %q was already defined at %s. Module calls must have unique names within a module.", prev.name, prev.rng),
				Subject:  mc.rng.Ptr(),
			})
		}
		m.calls[mc.name] = mc
	}
	for _, r := range f.resources {
		if prev, dup := m.resources[r.key()]; dup {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Duplicate %s %q configuration", resourceNoun(r.mode), prev.typ),
				Detail:   fmt.Sprintf("A %s %s named %q was already declared at %s. Resource names must be unique per type in each module.", prev.typ, resourceNoun(r.mode), prev.name, prev.rng),
				Subject:  r.rng.Ptr(),
			})
			continue
		}
		m.resources[r.key()] = r
	}
	m.imports = append(m.imports, f.imports...)
	return diags
}

// resourceNoun names a resource mode as OpenTofu's messages do.
func resourceNoun(mode string) string {
	switch mode {
	case "data":
		return "data"
	case "ephemeral":
		return "ephemeral resource"
	}
	return "resource"
}

// overrideNoun names a resource mode as OpenTofu's override messages do.
func overrideNoun(mode string) string {
	if mode == "data" {
		return "data resource"
	}
	return resourceNoun(mode)
}

// mergeFile merges an override file: provider versions, resource provider
// references and module sources and versions replace the primary ones;
// overriding something that does not exist is an error (except a default
// provider configuration, which exists implicitly).
func (m *module) mergeFile(f *file) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, p := range f.providers {
		prev, ok := m.providers[p.key()]
		switch {
		case !ok && p.alias == "":
			m.providers[p.key()] = p
		case !ok:
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing base provider configuration for override",
				Detail:   fmt.Sprintf("There is no %s provider configuration with the alias %q. An override file can only override an aliased provider configuration that was already defined in a primary configuration file.", p.name, p.alias),
				Subject:  p.rng.Ptr(),
			})
		case p.version.set:
			prev.version = p.version
		}
	}
	for _, mc := range f.calls {
		prev, ok := m.calls[mc.name]
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing module call to override",
				Detail:   fmt.Sprintf("There is no module call named %q. An override file can only override a module call that was defined in a primary configuration file.", mc.name),
				Subject:  mc.rng.Ptr(),
			})
			continue
		}
		if mc.source != nil {
			prev.source = mc.source
		}
		if mc.versionAttr != nil {
			prev.versionAttr = mc.versionAttr
		}
	}
	for _, r := range f.resources {
		prev, ok := m.resources[r.key()]
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  fmt.Sprintf("Missing %s to override", overrideNoun(r.mode)),
				Detail:   fmt.Sprintf("There is no %s %s named %q. An override file can only override a %s block defined in a primary configuration file.", r.typ, overrideNoun(r.mode), r.name, r.mode),
				Subject:  r.rng.Ptr(),
			})
			continue
		}
		if r.provider != "" {
			prev.provider = r.provider
		}
	}
	for _, imp := range f.imports {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot override 'import' blocks",
			Detail:   "Import blocks can appear only in normal files, not in override files.",
			Subject:  imp.rng.Ptr(),
		})
	}
	return diags
}

// providerFor is the address a local name stands for in this module: its
// required_providers entry, or the implied hashicorp/<name>.
func (m *module) providerFor(localName string, c Client) names.Provider {
	if rp, ok := m.required[localName]; ok {
		return rp.address(c)
	}
	return impliedProvider(localName, c)
}

// impliedLocalName is the local name a resource type implies: the part
// before the first underscore (aws_instance → aws), or "" when that is not
// a valid name.
func impliedLocalName(resourceType string) string {
	name, _, _ := strings.Cut(resourceType, "_")
	norm, err := parseProviderPart(name)
	if err != nil {
		return ""
	}
	return norm
}

// addRequirements adds what this module requires to reqs, as OpenTofu's
// addProviderRequirements does: required_providers entries with their
// constraints, providers implied by resources, data sources, ephemeral
// resources and import blocks, provider blocks (with their deprecated
// version argument) and, for the root module, test files' provider blocks.
// For Terraform, test files and imports into child modules add nothing.
func (m *module) addRequirements(reqs *requirements, c Client) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, name := range slices.Sorted(maps.Keys(m.required)) {
		rp := m.required[name]
		cons, d := rp.version.parsedConstraints()
		diags = append(diags, d...)
		reqs.add(rp.address(c), cons, rp.rng)
	}
	for _, key := range slices.Sorted(maps.Keys(m.resources)) {
		r := m.resources[key]
		local := r.provider
		if local == "" {
			local = impliedLocalName(r.typ)
		}
		if local != "" {
			reqs.add(m.providerFor(local, c), nil, r.rng)
		}
	}
	for _, imp := range m.imports {
		if imp.inModule && !c.readsTofuFiles() {
			// Terraform leaves the provider of an import into a child
			// module to that module (`terraform providers` lists none for
			// it in the calling module); tofu adds it where the block is.
			continue
		}
		local := imp.provider
		if local == "" {
			local = impliedLocalName(imp.resourceType)
		}
		if local != "" {
			reqs.add(m.providerFor(local, c), nil, imp.rng)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(m.providers)) {
		diags = append(diags, m.addProviderBlock(reqs, m.providers[key], c)...)
	}
	if c.readsTofuFiles() {
		// tofu init counts the provider blocks of test files; Terraform
		// 1.11's init does not (the e2e suite checks both).
		for _, p := range m.testProviders {
			diags = append(diags, m.addProviderBlock(reqs, p, c)...)
		}
	}
	return diags
}

func (m *module) addProviderBlock(reqs *requirements, p *providerConfig, c Client) hcl.Diagnostics {
	cons, diags := p.version.parsedConstraints()
	reqs.add(m.providerFor(p.name, c), cons, p.rng)
	return diags
}

var testFileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "provider", LabelNames: []string{"name"}},
	{Type: "run", LabelNames: []string{"name"}},
}}

var runBlockSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "module"}}}

// decodeTestFile returns a test file's provider blocks, which tofu init
// counts as requirements of the root module. A run block's own module
// (run { module { source = … } }) is reported: its providers would be
// required too, and lock does not read it.
func decodeTestFile(p *hclparse.Parser, path string, c Client) ([]*providerConfig, hcl.Diagnostics) {
	hf, diags := parseFile(p, path)
	if hf == nil || diags.HasErrors() {
		return nil, diags
	}
	content, _, d := hf.Body.PartialContent(testFileSchema)
	diags = append(diags, d...)
	var out []*providerConfig
	for _, b := range content.Blocks {
		switch b.Type {
		case "provider":
			pc, d := decodeProviderBlock(b, c)
			diags = append(diags, d...)
			if pc != nil {
				out = append(out, pc)
			}
		case "run":
			rc, _, _ := b.Body.PartialContent(runBlockSchema)
			for _, mb := range rc.Blocks {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Test run modules are not supported",
					Detail:   fmt.Sprintf("oci-tofu lock does not read the module of run %q; the providers it requires would be missing from the lock file.", b.Labels[0]),
					Subject:  mb.DefRange.Ptr(),
				})
			}
		}
	}
	return out, diags
}
