package assistant

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// maxLockProviders bounds the providers one get_lock_blocks call locks.
const maxLockProviders = 20

// SearchProvidersIn are search_providers' arguments.
type SearchProvidersIn struct {
	ProviderQuery string `json:"provider_query,omitempty" jsonschema:"words to look for in provider addresses and in the resource and data source names of their documentation (aws_instance finds hashicorp/aws); empty lists every provider"`
	Page          int    `json:"page,omitempty" jsonschema:"the page of results, from 1 (50 a page)"`
}

// SearchProvidersOut is what search_providers answers.
type SearchProvidersOut struct {
	Providers []ProviderHit `json:"providers"`
	Total     int           `json:"total"`
	Page      int           `json:"page"`
	Pages     int           `json:"pages"`
}

// ProviderHit is a provider search_providers found.
type ProviderHit struct {
	Address   string        `json:"address" jsonschema:"HOST/NAMESPACE/TYPE, the source of a required_providers entry"`
	Namespace string        `json:"namespace"`
	Name      string        `json:"name" jsonschema:"the provider's type"`
	Latest    string        `json:"latest" jsonschema:"the newest version served, empty when none is"`
	Versions  int           `json:"versions" jsonschema:"how many versions are served"`
	Hits      []catalog.Hit `json:"hits" jsonschema:"where the query matched beside the address"`
}

// ProviderIn name a provider and a version, as HashiCorp's
// get_latest_provider_version names a provider.
type ProviderIn struct {
	Namespace string `json:"namespace" jsonschema:"the provider's namespace, e.g. hashicorp"`
	Name      string `json:"name" jsonschema:"the provider's type, e.g. aws"`
	Host      string `json:"host,omitempty" jsonschema:"the provider's registry host (default registry.opentofu.org, else the proxy's own host when it holds the provider there)"`
	Version   string `json:"version,omitempty" jsonschema:"the version (default: the newest served)"`
}

// address is the provider address in names.
func (in ProviderIn) address() string {
	a := in.Namespace + "/" + in.Name
	if in.Host != "" {
		a = in.Host + "/" + a
	}
	return a
}

// LatestProviderIn are get_latest_provider_version's arguments.
type LatestProviderIn struct {
	Namespace string `json:"namespace" jsonschema:"the provider's namespace, e.g. hashicorp"`
	Name      string `json:"name" jsonschema:"the provider's type, e.g. aws"`
	Host      string `json:"host,omitempty" jsonschema:"the provider's registry host (default registry.opentofu.org, else the proxy's own host when it holds the provider there)"`
}

// ProviderDetails is what get_provider_details answers.
type ProviderDetails struct {
	Address string                `json:"address"`
	Version string                `json:"version"`
	Latest  string                `json:"latest"`
	Status  catalog.VersionStatus `json:"status"`
	// Usage is a required_providers entry for it.
	Usage        string                  `json:"usage" jsonschema:"a required_providers entry for it"`
	Platforms    []string                `json:"platforms"`
	Protocols    []string                `json:"protocols"`
	Signer       catalog.Signer          `json:"signer" jsonschema:"who signed it: publisher keys its push verified, a keyless identity, the signers the policy requires"`
	Attestation  *catalog.Admission      `json:"attestation,omitempty"`
	Docs         []DocCategory           `json:"docs" jsonschema:"its documentation's categories and how many pages each has"`
	Versions     []catalog.VersionStatus `json:"versions" jsonschema:"the newest versions, each with the policy's status"`
	VersionCount int                     `json:"version_count"`
	Page         string                  `json:"page" jsonschema:"the catalogue page, relative to the proxy's root"`
}

// DocCategory is a category of a provider's documentation.
type DocCategory struct {
	Category string `json:"category"`
	Count    int    `json:"count"`
}

// Vulnerabilities is what get_vulnerabilities answers.
type Vulnerabilities struct {
	Address string `json:"address"`
	Version string `json:"version"`
	// Database is the vulnerability database's fingerprint, empty when
	// the proxy has none.
	Database        string                  `json:"database" jsonschema:"the offline vulnerability database's fingerprint, empty when the proxy has none"`
	Vulnerabilities []catalog.Vulnerability `json:"vulnerabilities"`
	SBOMs           []catalog.PlatformSBOM  `json:"sboms" jsonschema:"each platform's SBOM, or why none is stored"`
}

// UsageIn are get_version_usage's arguments: a provider as
// get_provider_details names one, or a module as get_module_details
// does, and the version whose downloads are counted beside the
// address's.
type UsageIn struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"a provider's namespace, e.g. hashicorp"`
	Name      string `json:"name,omitempty" jsonschema:"a provider's type, e.g. aws"`
	Host      string `json:"host,omitempty" jsonschema:"the provider's registry host (default registry.opentofu.org, else the proxy's own host when it holds the provider there)"`
	ModuleID  string `json:"module_id,omitempty" jsonschema:"a module instead of a provider: [HOST/]NAMESPACE/NAME/SYSTEM[/VERSION], as search_modules returns it"`
	Version   string `json:"version,omitempty" jsonschema:"a version: its own downloads are counted beside the address's"`
}

// Usage is what get_version_usage answers.
type Usage struct {
	Kind    string              `json:"kind" jsonschema:"module or provider"`
	Address string              `json:"address"`
	Counts  catalog.UsageCounts `json:"counts" jsonschema:"the address's downloads from the audit trail, and the version's when one is asked about"`
}

// LockIn are get_lock_blocks' arguments.
type LockIn struct {
	Providers []LockProvider `json:"providers" jsonschema:"the providers to lock, at most 20"`
	Platforms []string       `json:"platforms,omitempty" jsonschema:"OS_ARCH platforms to hash (default: every platform of each release)"`
}

// LockProvider is a provider and version to lock.
type LockProvider struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Host      string `json:"host,omitempty" jsonschema:"default registry.opentofu.org, else the proxy's own host when it holds the provider there"`
	Version   string `json:"version"`
}

// LockOut is what get_lock_blocks answers.
type LockOut struct {
	// Lock is the provider blocks of .terraform.lock.hcl, as oci-tofu
	// lock writes them, in the order asked.
	Lock   string      `json:"lock" jsonschema:"the provider blocks of .terraform.lock.hcl, as oci-tofu lock writes them"`
	Blocks []LockBlock `json:"blocks"`
}

// LockBlock is one provider's block.
type LockBlock struct {
	Address   string   `json:"address"`
	Version   string   `json:"version"`
	Platforms []string `json:"platforms"`
	Block     string   `json:"block"`
}

func addProviderTools(s *mcp.Server, t *tools) {
	add(s, readOnly("search_providers", "Search providers",
		"Searches the providers the organisation holds (only those you may read) by address and by the resource "+
			"and data source names their documentation lists."), t.searchProviders)
	add(s, readOnly("get_provider_details", "Provider details",
		"A provider version the organisation holds: a required_providers entry, its platforms, plugin protocols, "+
			"signers, documentation categories, and the policy's status of each recent version."), t.providerDetails)
	add(s, readOnly("get_latest_provider_version", "Latest provider version",
		"The newest version of a provider that the proxy serves, with the policy's status."), t.latestProvider)
	add(s, readOnly("get_vulnerabilities", "Known vulnerabilities",
		"The known vulnerabilities of a provider version, from the proxy's offline vulnerability database matched "+
			"against the SBOMs stored with it."), t.vulnerabilities)
	add(s, readOnly("get_version_usage", "Who uses it",
		"How often a provider or a module was downloaded through the proxy and by how many clients, and a version "+
			"of it when one is asked about (from its audit trail); answered only to a caller that may read every address."), t.usage)
	add(s, readOnly("get_lock_blocks", "Lock-file blocks",
		"Complete .terraform.lock.hcl provider blocks (h1 and zh hashes) for chosen provider versions and platforms, "+
			"as oci-tofu lock writes them."), t.lockBlocks)
}

func (t *tools) searchProviders(ctx context.Context, in SearchProvidersIn) (SearchProvidersOut, error) {
	q, err := indexQuery(in.ProviderQuery, in.Page)
	if err != nil {
		return SearchProvidersOut{}, err
	}
	q.Set("kind", catalog.KindProvider)
	var d catalog.IndexPage
	if err := t.cat.Get(ctx, "", q, &d); err != nil {
		return SearchProvidersOut{}, err
	}
	out := SearchProvidersOut{Providers: []ProviderHit{}, Total: d.ProviderTotal, Page: d.Page, Pages: (d.ProviderTotal + catalog.PageSize - 1) / catalog.PageSize}
	for _, e := range d.Providers {
		out.Providers = append(out.Providers, ProviderHit{Address: e.Address, Namespace: e.Namespace, Name: e.Type,
			Latest: e.Latest, Versions: e.Versions, Hits: hits(e.Hits)})
	}
	return out, nil
}

// providerPage is the catalogue's page of the provider version in names,
// its lock block for platforms. An address without a host is
// registry.opentofu.org's, as tofu reads it, else (when the catalogue
// holds nothing there) the proxy's own host's: a --provider-template
// without ${hostname} lists what it holds under the proxy's host, and
// search_providers names it so.
func (t *tools) providerPage(ctx context.Context, address, version string, platforms []string) (catalog.ProviderPage, error) {
	p, v, err := parseProvider(address, version)
	if err != nil {
		return catalog.ProviderPage{}, err
	}
	q := url.Values{}
	for _, pl := range platforms {
		q.Add("platform", pl)
	}
	var d catalog.ProviderPage
	err = t.cat.Get(ctx, providerPath(p, v), q, &d)
	if own := t.ownProviderHost(ctx, address); own != "" && own != p.Hostname && notHeld(err) {
		p.Hostname = own
		d = catalog.ProviderPage{}
		err = t.cat.Get(ctx, providerPath(p, v), q, &d)
	}
	return d, err
}

// ownProviderHost is the proxy's own host when address names no host,
// "" otherwise.
func (t *tools) ownProviderHost(ctx context.Context, address string) string {
	if strings.Count(address, "/") != 1 {
		return ""
	}
	own, err := t.cat.OwnHost(ctx)
	if err != nil {
		return ""
	}
	return own
}

// notHeld reports whether err is the catalogue's refusal of an address
// it does not show (held nowhere here, or out of the caller's scope).
func notHeld(err error) bool {
	var r *Refusal
	return errors.As(err, &r) && r.Status == http.StatusNotFound
}

func (t *tools) providerDetails(ctx context.Context, in ProviderIn) (ProviderDetails, error) {
	d, err := t.providerPage(ctx, in.address(), in.Version, nil)
	if err != nil {
		return ProviderDetails{}, err
	}
	out := ProviderDetails{Address: d.Address, Version: d.Version, Latest: d.Latest, Status: d.Status, Usage: d.Usage,
		Platforms: nonNil(d.Platforms), Protocols: nonNil(d.Protocols), Signer: d.Signer, Attestation: d.Attestation,
		Docs: []DocCategory{}, Versions: newest(d.Versions), VersionCount: len(d.Versions),
		Page: catalog.Prefix + providerPathOf(d)}
	out.Signer.KeyIDs, out.Signer.Required = nonNil(out.Signer.KeyIDs), nonNil(out.Signer.Required)
	for _, c := range d.Docs.Categories {
		out.Docs = append(out.Docs, DocCategory{Category: c.Category, Count: c.Count})
	}
	return out, nil
}

// providerPathOf is the catalogue path of the version d shows.
func providerPathOf(d catalog.ProviderPage) string {
	return "providers/" + d.Address + "/" + d.Version
}

func (t *tools) latestProvider(ctx context.Context, in LatestProviderIn) (Latest, error) {
	d, err := t.providerPage(ctx, ProviderIn{Namespace: in.Namespace, Name: in.Name, Host: in.Host}.address(), "", nil)
	if err != nil {
		return Latest{}, err
	}
	return Latest{ID: d.Address + "@" + d.Version, Version: d.Version, Status: d.Status}, nil
}

func (t *tools) vulnerabilities(ctx context.Context, in ProviderIn) (Vulnerabilities, error) {
	d, err := t.providerPage(ctx, in.address(), in.Version, nil)
	if err != nil {
		return Vulnerabilities{}, err
	}
	return Vulnerabilities{Address: d.Address, Version: d.Version, Database: d.SBOMs.Database,
		Vulnerabilities: nonNil(d.SBOMs.Vulnerabilities), SBOMs: nonNil(d.SBOMs.Platforms)}, nil
}

func (t *tools) usage(ctx context.Context, in UsageIn) (Usage, error) {
	r, err := t.usageOf(ctx, in)
	if err != nil {
		return Usage{}, err
	}
	if r.counts == nil {
		return Usage{}, fmt.Errorf("no usage of %s is shown: the proxy keeps no audit trail, or your credential may not read every address", r.address)
	}
	out := Usage{Kind: r.kind, Address: r.address, Counts: *r.counts}
	if !r.asked {
		out.Counts.Version = nil // the newest version's: not asked about
	}
	return out, nil
}

// usageRead is what a catalogue page says of an address's usage, and
// whether a version was asked about.
type usageRead struct {
	kind, address string
	counts        *catalog.UsageCounts
	asked         bool
}

// usageOf reads the downloads on the catalogue page of the provider or
// the module in names.
func (t *tools) usageOf(ctx context.Context, in UsageIn) (usageRead, error) {
	provider := in.Namespace != "" || in.Name != "" || in.Host != ""
	switch {
	case in.ModuleID != "" && provider:
		return usageRead{}, fmt.Errorf("module_id: give a module or a provider (namespace, name, host), not both")
	case in.ModuleID != "":
		m, err := t.moduleID(ctx, in.ModuleID, in.Version)
		if err != nil {
			return usageRead{}, err
		}
		m.dir = "" // a submodule's downloads are its package's
		d, err := t.readModule(ctx, m)
		return usageRead{kind: catalog.KindModule, address: d.Address, counts: d.Downloads, asked: m.version != nil}, err
	case !provider:
		return usageRead{}, fmt.Errorf("namespace, name: a provider (namespace, name) or a module (module_id) is required")
	}
	d, err := t.providerPage(ctx, ProviderIn{Namespace: in.Namespace, Name: in.Name, Host: in.Host}.address(), in.Version, nil)
	v, _ := parseVersion(in.Version)
	return usageRead{kind: catalog.KindProvider, address: d.Address, counts: d.Downloads, asked: v != nil}, err
}

func (t *tools) lockBlocks(ctx context.Context, in LockIn) (LockOut, error) {
	if len(in.Providers) == 0 || len(in.Providers) > maxLockProviders {
		return LockOut{}, fmt.Errorf("providers: want 1 to %d, got %d", maxLockProviders, len(in.Providers))
	}
	if len(in.Platforms) > 64 {
		return LockOut{}, fmt.Errorf("platforms: want at most 64, got %d", len(in.Platforms))
	}
	out := LockOut{Blocks: []LockBlock{}}
	var all []string
	for _, p := range in.Providers {
		if p.Version == "" {
			return LockOut{}, fmt.Errorf("provider %s/%s: a version is required", clip(p.Namespace), clip(p.Name))
		}
		b, err := t.lockBlock(ctx, p, in.Platforms)
		if err != nil {
			return LockOut{}, err
		}
		out.Blocks = append(out.Blocks, b)
		all = append(all, b.Block)
	}
	out.Lock = strings.Join(all, "\n")
	return out, nil
}

// lockBlock is p's provider block for platforms.
func (t *tools) lockBlock(ctx context.Context, p LockProvider, platforms []string) (LockBlock, error) {
	d, err := t.providerPage(ctx, ProviderIn{Namespace: p.Namespace, Name: p.Name, Host: p.Host}.address(), p.Version, platforms)
	if err != nil {
		return LockBlock{}, err
	}
	if d.Lock == "" {
		return LockBlock{}, fmt.Errorf("no lock block for %s %s: %s", d.Address, d.Version, d.LockProblem)
	}
	return LockBlock{Address: d.Address, Version: d.Version, Platforms: nonNil(d.LockPlatforms), Block: d.Lock}, nil
}
