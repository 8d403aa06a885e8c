package assistant

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// versionsShown bounds the versions a details answer lists (newest
// first); VersionCount says how many there are.
const versionsShown = 20

// maxPage bounds a page argument.
const maxPage = 10000

// SearchModulesIn are search_modules' arguments.
type SearchModulesIn struct {
	ModuleQuery string `json:"module_query,omitempty" jsonschema:"words to look for in module addresses, descriptions, inputs, outputs, resources and required providers; empty lists every module"`
	Provider    string `json:"provider,omitempty" jsonschema:"only modules that require this provider ([HOST/]NAMESPACE/TYPE)"`
	Namespace   string `json:"namespace,omitempty" jsonschema:"only modules of this namespace"`
	Status      string `json:"status,omitempty" jsonschema:"only modules whose newest version has this status: served, deprecated or denied"`
	Page        int    `json:"page,omitempty" jsonschema:"the page of results, from 1 (50 a page)"`
}

// SearchModulesOut is what search_modules answers.
type SearchModulesOut struct {
	Modules []ModuleHit `json:"modules"`
	// Total is how many modules match; Page and Pages page them.
	Total int `json:"total"`
	Page  int `json:"page"`
	Pages int `json:"pages"`
	// Complete is false when some repositories could not be listed.
	Complete bool `json:"complete"`
}

// ModuleHit is a module search_modules found.
type ModuleHit struct {
	ModuleID string        `json:"module_id" jsonschema:"HOST/NAMESPACE/NAME/SYSTEM: what get_module_details takes"`
	Address  string        `json:"address,omitempty" jsonschema:"the source address a module block writes through the proxy (absent when no proxy serves it: get_module_details gives the oci:// source)"`
	Latest   string        `json:"latest" jsonschema:"the newest version served, empty when none is"`
	Versions int           `json:"versions" jsonschema:"how many versions are served"`
	Hits     []catalog.Hit `json:"hits" jsonschema:"where the query matched beside the address"`
}

// ModuleIn are get_module_details' arguments.
type ModuleIn struct {
	ModuleID string `json:"module_id" jsonschema:"[HOST/]NAMESPACE/NAME/SYSTEM[/VERSION] as search_modules returns it (without HOST: the proxy's own modules), and //modules/NAME or //examples/NAME for a submodule or an example"`
	Version  string `json:"version,omitempty" jsonschema:"the version (default: the newest served)"`
}

// ModuleDetails is what get_module_details answers.
type ModuleDetails struct {
	ModuleID string `json:"module_id" jsonschema:"HOST/NAMESPACE/NAME/SYSTEM/VERSION[//DIR] of the version and directory shown"`
	Address  string `json:"address" jsonschema:"the source address a module block writes (oci://REPOSITORY when no proxy serves it)"`
	Version  string `json:"version"`
	Latest   string `json:"latest" jsonschema:"the newest version served"`
	// Status is the policy's word on the version shown.
	Status catalog.VersionStatus `json:"status"`
	// Usage is a module block calling the version through the proxy;
	// UsageOCI the same with OpenTofu's oci:// source.
	Usage        string                          `json:"usage" jsonschema:"a module block calling this version through the proxy (or by its oci:// source when no proxy serves it; empty for an example, or a module in an OCI layout directory without a proxy), each required input set to a placeholder of its type"`
	UsageOCI     string                          `json:"usage_oci,omitempty" jsonschema:"the same with OpenTofu's oci:// source (tofu 1.10 and later, no proxy)"`
	Constraint   string                          `json:"constraint" jsonschema:"the version constraint usage writes: the loosest that installs this version among those served now (empty for an oci:// source: it names a tag)"`
	Inputs       []Input                         `json:"inputs"`
	Outputs      []Output                        `json:"outputs"`
	RequiredCore []string                        `json:"required_core" jsonschema:"the OpenTofu/Terraform version constraints"`
	Providers    []moduledoc.ProviderRequirement `json:"providers" jsonschema:"the providers it requires"`
	Modules      []Call                          `json:"modules" jsonschema:"the modules it calls"`
	Resources    []Resource                      `json:"resources"`
	Submodules   []string                        `json:"submodules" jsonschema:"its submodules' directories (modules/NAME): get_module_details shows one as MODULE_ID//modules/NAME"`
	Examples     []string                        `json:"examples" jsonschema:"its examples' directories"`
	Versions     []catalog.VersionStatus         `json:"versions" jsonschema:"the newest versions, each with the policy's status"`
	VersionCount int                             `json:"version_count"`
	Page         string                          `json:"page" jsonschema:"the catalogue page, relative to the proxy's root"`
}

// Input is one of a module's variables.
type Input struct {
	Name        string `json:"name"`
	Type        string `json:"type" jsonschema:"the type constraint as written, empty for any"`
	Required    bool   `json:"required"`
	Default     Value  `json:"default,omitempty"`
	Description string `json:"description,omitempty"`
	Sensitive   bool   `json:"sensitive,omitempty"`
	Nullable    bool   `json:"nullable"`
	Ephemeral   bool   `json:"ephemeral,omitempty"`
	Deprecated  string `json:"deprecated,omitempty"`
}

// Output is one of a module's outputs.
type Output struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Sensitive   bool   `json:"sensitive,omitempty"`
}

// Call is a module block of the module.
type Call struct {
	Name    string `json:"name"`
	Source  string `json:"source"`
	Version string `json:"version,omitempty"`
}

// Resource is a resource, data or ephemeral block of the module.
type Resource struct {
	Address string `json:"address"`
	Mode    string `json:"mode"`
	Type    string `json:"type"`
}

// LatestModuleIn are get_latest_module_version's arguments, named as
// HashiCorp's server names them.
type LatestModuleIn struct {
	ModulePublisher string `json:"module_publisher" jsonschema:"the module's namespace"`
	ModuleName      string `json:"module_name"`
	ModuleProvider  string `json:"module_provider" jsonschema:"the module's target system, e.g. aws"`
	Host            string `json:"host,omitempty" jsonschema:"the module's registry host (default: the proxy's own)"`
}

// Latest is the newest version served of an address.
type Latest struct {
	ID      string                `json:"id" jsonschema:"the address and version, as the details tools take them"`
	Version string                `json:"version"`
	Status  catalog.VersionStatus `json:"status"`
}

func addModuleTools(s *mcp.Server, t *tools) {
	add(s, readOnly("search_modules", "Search modules",
		"Searches the modules the organisation holds (only those you may read) by words in their addresses, "+
			"descriptions, inputs, outputs and resources, optionally filtered by required provider, namespace or "+
			"status. Call it before get_module_details to get a module_id."), t.searchModules)
	add(s, readOnly("get_module_details", "Module details",
		"The interface of a module version the organisation holds: a usage snippet with this proxy's address and "+
			"a version constraint that installs this version, inputs (type, default, required), outputs, required providers, module calls, "+
			"resources, submodules, examples, and the policy's status of each recent version."), t.moduleDetails)
	add(s, readOnly("get_latest_module_version", "Latest module version",
		"The newest version of a module that the proxy serves, with the policy's status."), t.latestModule)
}

func (t *tools) searchModules(ctx context.Context, in SearchModulesIn) (SearchModulesOut, error) {
	q, err := indexQuery(in.ModuleQuery, in.Page)
	if err != nil {
		return SearchModulesOut{}, err
	}
	q.Set("kind", catalog.KindModule)
	setIf(q, "provider", in.Provider)
	setIf(q, "namespace", in.Namespace)
	setIf(q, "status", in.Status)
	var d catalog.IndexPage
	if err := t.cat.Get(ctx, "", q, &d); err != nil {
		return SearchModulesOut{}, err
	}
	out := SearchModulesOut{Modules: []ModuleHit{}, Total: d.Total, Page: d.Page, Pages: d.Pages, Complete: d.Complete}
	for _, e := range d.Modules {
		h := ModuleHit{ModuleID: e.Host + "/" + e.Namespace + "/" + e.Name + "/" + e.System,
			Address: e.Address, Latest: e.Latest, Versions: e.Versions, Hits: hits(e.Hits)}
		if t.direct {
			h.Address = ""
		}
		out.Modules = append(out.Modules, h)
	}
	return out, nil
}

// indexQuery is the index's query of a search: words and page.
func indexQuery(words string, page int) (url.Values, error) {
	if len(words) > maxAddress {
		return nil, fmt.Errorf("the query is longer than %d bytes", maxAddress)
	}
	if page < 0 || page > maxPage {
		return nil, fmt.Errorf("page %d: want 1 to %d", page, maxPage)
	}
	q := url.Values{}
	setIf(q, "q", words)
	if page > 0 {
		q.Set("page", strconv.Itoa(page))
	}
	return q, nil
}

func (t *tools) moduleDetails(ctx context.Context, in ModuleIn) (ModuleDetails, error) {
	d, err := t.modulePage(ctx, in.ModuleID, in.Version)
	if err != nil {
		return ModuleDetails{}, err
	}
	out := moduleDetails(d)
	if t.direct {
		out.Address, out.Usage, out.Constraint = "", out.UsageOCI, ""
		if out.UsageOCI != "" { // oci:// reads registries, not layouts
			out.Address = "oci://" + d.Repository
		}
	}
	return out, nil
}

// modulePage is the catalogue's page of the module version id names.
func (t *tools) modulePage(ctx context.Context, id, version string) (catalog.ModulePage, error) {
	m, err := t.moduleID(ctx, id, version)
	if err != nil {
		return catalog.ModulePage{}, err
	}
	return t.readModule(ctx, m)
}

// moduleID is the module id names, at version when it is not "".
func (t *tools) moduleID(ctx context.Context, id, version string) (moduleID, error) {
	own, err := t.cat.OwnHost(ctx)
	if err != nil {
		return moduleID{}, err
	}
	return parseModuleID(id, version, own)
}

// readModule is the catalogue's page of m. A directory of the newest
// version reads the module's page first, to learn which version that is.
func (t *tools) readModule(ctx context.Context, m moduleID) (catalog.ModulePage, error) {
	if m.dir != "" && m.version == nil {
		root := m
		root.dir = ""
		d, err := t.readModule(ctx, root)
		if err != nil {
			return catalog.ModulePage{}, err
		}
		v, err := names.ParseVersion(d.Version)
		if err != nil {
			return catalog.ModulePage{}, fmt.Errorf("the catalogue's version %q: %w", clip(d.Version), err)
		}
		m = m.atVersion(v)
	}
	var d catalog.ModulePage
	err := t.cat.Get(ctx, m.path(), nil, &d)
	return d, err
}

func (t *tools) latestModule(ctx context.Context, in LatestModuleIn) (Latest, error) {
	id := in.ModulePublisher + "/" + in.ModuleName + "/" + in.ModuleProvider
	if in.Host != "" {
		id = in.Host + "/" + id
	}
	d, err := t.modulePage(ctx, id, "")
	if err != nil {
		return Latest{}, err
	}
	return Latest{ID: d.Host + "/" + d.Namespace + "/" + d.Name + "/" + d.System + "/" + d.Version, Version: d.Version, Status: statusOf(d.Versions, d.Version)}, nil
}

// moduleDetails is get_module_details' answer from the page d.
func moduleDetails(d catalog.ModulePage) ModuleDetails {
	id := d.Host + "/" + d.Namespace + "/" + d.Name + "/" + d.System + "/" + d.Version
	page := catalog.Prefix + "modules/" + id
	if d.Dir != "" {
		id, page = id+"//"+d.Dir, page+"/"+d.Dir
	}
	out := ModuleDetails{ModuleID: id,
		Address: d.Address, Version: d.Version, Latest: d.Latest, Status: statusOf(d.Versions, d.Version),
		Inputs: []Input{}, Outputs: []Output{}, RequiredCore: []string{}, Providers: []moduledoc.ProviderRequirement{},
		Modules: []Call{}, Resources: []Resource{}, Submodules: dirs(d.Submodules), Examples: dirs(d.Examples),
		Versions: newest(d.Versions), VersionCount: len(d.Versions),
		Page: page}
	if d.Usage != nil {
		out.Usage, out.UsageOCI, out.Constraint = d.Usage.Registry, d.Usage.OCI, d.Usage.Constraint
	}
	if m := d.Module; m != nil {
		out.Inputs, out.Outputs = inputs(m.Inputs), outputs(m.Outputs)
		out.RequiredCore, out.Providers = authorTexts(m.RequiredCore), requirements(m.RequiredProviders)
		out.Modules, out.Resources = calls(m.ModuleCalls), resources(m.Resources)
	}
	return out
}

func inputs(in []moduledoc.Input) []Input {
	out := make([]Input, 0, len(in))
	for _, i := range in {
		out = append(out, Input{Name: i.Name, Type: i.Type, Required: i.Required, Default: value(i.Default),
			Description: authorText(i.Description), Sensitive: i.Sensitive, Nullable: i.Nullable, Ephemeral: i.Ephemeral,
			Deprecated: authorText(i.Deprecated)})
	}
	return out
}

// value is the JSON value raw holds (nil for none).
func value(raw json.RawMessage) Value {
	var v Value
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

func outputs(in []moduledoc.Output) []Output {
	out := make([]Output, 0, len(in))
	for _, o := range in {
		out = append(out, Output{Name: o.Name, Description: authorText(o.Description), Sensitive: o.Sensitive})
	}
	return out
}

func calls(in []moduledoc.ModuleCall) []Call {
	out := make([]Call, 0, len(in))
	for _, c := range in {
		out = append(out, Call{Name: c.Name, Source: authorText(c.Source), Version: authorText(c.Version)})
	}
	return out
}

func resources(in []moduledoc.Resource) []Resource {
	out := make([]Resource, 0, len(in))
	for _, r := range in {
		out = append(out, Resource{Address: r.Address, Mode: r.Mode, Type: r.Type})
	}
	return out
}

func dirs(in []catalog.DirLink) []string {
	out := make([]string, 0, len(in))
	for _, l := range in {
		out = append(out, l.Dir)
	}
	return out
}

// statusOf is version v's entry of vs (newest first).
func statusOf(vs []catalog.VersionStatus, v string) catalog.VersionStatus {
	for _, s := range vs {
		if s.Version == v {
			return s
		}
	}
	return catalog.VersionStatus{Version: v}
}

// newest are the first versionsShown of vs (newest first).
func newest(vs []catalog.VersionStatus) []catalog.VersionStatus {
	return nonNil(vs[:min(len(vs), versionsShown)])
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func setIf(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}
