// Package page is the page for people at "/": what the proxy serves,
// from where, and the client configuration to copy, with the record of
// what was served (kept as the responder's respond.Observer, shared with
// a fleet's other replicas through a sharedstate.Board).
package page

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/cliconfig"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
	"github.com/oci-tofu/oci-tofu/protocol/policyfile"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/modules"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/providers"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// PagePath is the page for people: what this proxy serves and how to
// configure clients. The mirror's base URL answers it too (the network
// mirror protocol leaves that URL to the server).
const PagePath = "/"

//go:embed page.html.tmpl sbom.html.tmpl style.html.tmpl catalog.html.tmpl module.html.tmpl provider.html.tmpl tofu.html.tmpl
var pageFS embed.FS

// The templates are parsed on first use, not when a program importing
// the package starts (every CLI command: a few milliseconds each).
var pageTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
		"ago":     ago,
		"join":    strings.Join,
		"slash":   breakAfterSlashes,
		"outcome": outcomeClass,
		"sbom":    providers.SBOMPath,
	}).ParseFS(pageFS, "page.html.tmpl", "style.html.tmpl"))
})

// ProviderMapping is a provider mapping as the page shows it: its
// repository template as written, its address patterns and where it was
// configured (as store.ProviderMapping has them).
type ProviderMapping struct {
	Template         string
	Include, Exclude []string
	Label            string
}

// Config is what the page shows of the server's configuration.
type Config struct {
	// Version is the binary's version.
	Version string
	// PublicURL, RegistryHostname: as proxy.Options has them.
	PublicURL, RegistryHostname string
	// Providers, Modules, Tofu: the mappings (nil when not served).
	Providers []ProviderMapping
	Modules   []*repotemplate.Template
	Tofu      *oci.Reference
	// Minimal: client authentication is on, so the page shows health
	// and client configuration only: what is served, and from where, is
	// for clients holding a token.
	Minimal bool
	// ModuleOrigins are the origin module registries served under their
	// own paths (module pull-through).
	ModuleOrigins []string
	// OwnModules, when own-host module pull-through is on.
	OwnModules *OwnModules
	// Policy and PolicyStatus: the policy file in force and its reloads.
	Policy       *policy.Live
	PolicyStatus func() policyfile.Status
	// VulnDB is the vulnerability database the policy matches SBOMs
	// against (nil: none), for its reloads.
	VulnDB *vulns.Live
	// Log receives why another replica's record could not be read.
	Log *slog.Logger
	// Caller, with client authentication, says who the request's bearer
	// token names and what it may read ("" when it names no client).
	Caller func(r *http.Request) string
	// Deliveries, with an events file, are the last webhook deliveries
	// ended (webhook.Dispatcher.Recent); nil without one.
	Deliveries func() []webhook.Delivery
}

// Page is the page for people, built from memory only — the
// configuration and the record of what was served, which it keeps as
// the responder's respond.Observer and, with a shared store, shares with
// the fleet's other replicas — so it is fast and needs no registry.
type Page struct {
	cfg       Config
	seen      *seen
	downloads *downloads
	fleet     *fleetSeen // nil without a shared store
}

// New is a page showing cfg, with an empty record.
func New(cfg Config) *Page {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Page{cfg: cfg, seen: newSeen(), downloads: newDownloads()}
}

// Observer is told what was served: the page's record.
func (s *Page) Observer() respond.Observer { return s.seen }

// Downloads takes the requests' audit events, for the page's figures of
// downloads (this replica's: they are not shared with the fleet).
func (s *Page) Downloads() audit.Sink { return s.downloads }

// Usage is the downloads of address (of kind) this process delivered,
// as its record of the audit trail counts them.
func (s *Page) Usage(kind, address, version string) Usage {
	return s.downloads.usage(kind, address, version)
}

// Share publishes the record on board and shows the other replicas'
// records beside it, until Close.
func (s *Page) Share(board sharedstate.Board) {
	s.fleet = newFleetSeen(board, s.seen, s.cfg.Log)
}

// Close stops sharing the record (it expires from the board by itself).
func (s *Page) Close() { s.fleet.close() }

// pageData is what the page template shows.
type pageData struct {
	Host, Base string
	Serves     string // "providers, modules and OpenTofu releases"
	Version    string
	Minimal    bool
	Uptime     string
	Started    string
	Mappings   []mappingView
	Seen       seenView
	Fleet      *fleetView  // with a shared store (seen_fleet.go)
	Policy     *policyView // nil without a policy
	// Downloads, deprecated versions in use, and the newest events
	// (this replica's, downloads.go); nil on the minimal page.
	Downloads  *downloadsView
	Deprecated []versionInUse
	Snippets   []snippet
	// Caller is who the request's token names, with client
	// authentication ("" without one).
	Caller string
	// OwnModules, when own-host module pull-through is on: its origin and
	// patterns, shown as a warning.
	OwnModules *OwnModules
	// Catalog: modules or OpenTofu releases are served, and the
	// catalogue lists them.
	Catalog bool
	// Webhooks, with an events file, are its last deliveries; nil
	// without one and on the minimal page.
	Webhooks *webhooksView
}

// OwnModules is own-host module pull-through, for the page's warning.
type OwnModules struct {
	Origin   string
	Patterns []string
}

// mappingView is one configured mapping, for people.
type mappingView struct {
	What, Source, Template string
	Include, Exclude       []string
}

// snippet is a block of client configuration to copy.
type snippet struct {
	ID, Title, Note, Body string
}

// ServeHTTP answers the page.
func (s *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !respond.AllowRead(w, r) {
		return
	}
	host := r.Host
	if host == "" {
		host = "localhost"
	}
	base := "https://" + host
	if s.cfg.PublicURL != "" {
		base = s.cfg.PublicURL
		host = strings.TrimPrefix(base, "https://")
	}
	own := s.seen.view()
	d := pageData{
		Host:    host,
		Base:    base,
		Version: s.cfg.Version,
		Minimal: s.cfg.Minimal,
		Seen:    own,
		Catalog: len(s.cfg.Modules) > 0 || s.cfg.Tofu != nil,
	}
	if s.fleet != nil {
		fv := fleetView{}
		d.Seen, fv = s.fleet.view(r.Context(), own)
		d.Fleet = &fv
	}
	d.Started = d.Seen.Started.UTC().Format(time.RFC3339)
	d.Uptime = time.Since(d.Seen.Started).Round(time.Second).String()
	if !d.Minimal {
		d.Mappings = s.mappingViews()
		d.Policy = s.policyView()
		d.OwnModules = s.cfg.OwnModules
		dv := s.downloads.view()
		d.Downloads, d.Deprecated = &dv, dv.deprecatedInUse(d.Seen)
		d.Webhooks = s.webhooksView()
	}
	d.Serves = s.serves()
	seenProviders := own.Providers // this replica's own: nothing read from a shared store goes into configuration
	if s.cfg.Minimal {
		if s.cfg.Caller != nil {
			d.Caller = s.cfg.Caller(r)
		}
		d.Seen, seenProviders = withoutTraffic(d.Seen), nil
	}
	d.Snippets = s.snippets(r, d.Base, seenProviders)
	var b bytes.Buffer
	if err := pageTemplate().Execute(&b, d); err != nil {
		s.cfg.Log.Error("rendering the page", "error", err)
		respond.WriteError(w, r, http.StatusInternalServerError, "rendering the page failed")
		return
	}
	respond.WriteHTML(w, r, b.Bytes())
}

// withoutTraffic is what the minimal page shows of the record, to any
// caller: health, with the last failure's class and time but not its
// message, which names what another caller read (an address, a
// version); nothing of what was served.
func withoutTraffic(v seenView) seenView {
	out := seenView{Started: v.Started, Failures: v.Failures}
	if v.Failure != nil {
		out.Failure = &seenFailure{At: v.Failure.At, Class: v.Failure.Class, What: "details in the proxy's log"}
	}
	return out
}

// serves names what is configured, for the page's first line.
func (s *Page) serves() string {
	var what []string
	if len(s.cfg.Providers) > 0 {
		what = append(what, "Providers")
	}
	if len(s.cfg.Modules) > 0 {
		what = append(what, "modules")
	}
	if s.cfg.Tofu != nil {
		what = append(what, "OpenTofu releases")
	}
	switch len(what) {
	case 0:
		return ""
	case 1:
		return what[0]
	}
	return strings.Join(what[:len(what)-1], ", ") + " and " + what[len(what)-1]
}

func (s *Page) mappingViews() []mappingView {
	var out []mappingView
	for _, m := range s.cfg.Providers {
		out = append(out, mappingView{What: "providers", Source: m.Label, Template: m.Template, Include: m.Include, Exclude: m.Exclude})
	}
	tpls := s.cfg.Modules
	for i, t := range tpls {
		source := "--module-template"
		if len(tpls) > 1 {
			source = fmt.Sprintf("--module-template #%d", i+1) // merged in this order
		}
		out = append(out, mappingView{What: "modules", Source: source, Template: t.String()})
	}
	if t := s.cfg.Tofu; t != nil {
		out = append(out, mappingView{What: "OpenTofu releases", Source: "--tofu-repository", Template: t.String()})
	}
	return out
}

// snippets are the client configurations for what is configured.
func (s *Page) snippets(r *http.Request, base string, seenProviders []artifactView) []snippet {
	var out []snippet
	if len(s.cfg.Providers) > 0 {
		out = append(out,
			snippet{ID: "tofu-network-mirror", Title: "OpenTofu (any version): this proxy as network mirror",
				Note: "In ~/.tofurc, or the file TF_CLI_CONFIG_FILE names. Provider addresses in your configuration stay as they are. " +
					"With trust_all_hashes (OpenTofu ≥ 1.12; older versions ignore it), tofu init locks every platform this proxy serves, not only its own.",
				Body: s.networkMirrorSnippet(base, true)},
			snippet{ID: "terraform-network-mirror", Title: "Terraform: this proxy as network mirror",
				Note: "In ~/.terraformrc (terraform.rc on Windows), or the file TF_CLI_CONFIG_FILE names. Terraform's short addresses are on registry.terraform.io.",
				Body: s.networkMirrorSnippet(base, false)})
		// oci_mirror blocks name the registry's repositories: with client
		// authentication on, they are for operators, like the mappings.
		if oci, note := s.ociMirrorSnippet(seenHosts(seenProviders)); !s.cfg.Minimal && (oci != "" || note != "") {
			out = append(out, snippet{ID: "tofu-oci-mirror", Title: "OpenTofu ≥ 1.10: straight from the OCI registry (oci_mirror)",
				Note: note, Body: oci})
		}
		out = append(out, s.registrySnippet(r, base, seenProviders))
	}
	if len(s.cfg.Modules) > 0 {
		out = append(out, s.moduleSnippet(r))
		if len(s.cfg.ModuleOrigins) > 0 {
			out = append(out, moduleOriginsSnippet(base, s.cfg.ModuleOrigins))
		}
	}
	if s.cfg.Tofu != nil {
		out = append(out, snippet{ID: "tofudl", Title: "OpenTofu releases: TofuDL mirror",
			Note: "For tofudl, installers and CI; clients still verify SHA256SUMS and its signature.",
			Body: fmt.Sprintf("TOFUDL_API_URL=%s/tofu/api.json\nTOFUDL_DOWNLOAD_MIRROR_URL_TEMPLATE='%s/tofu/download/v{{ .Version }}/{{ .Artifact }}'\n", base, base)})
	}
	if s.cfg.Minimal {
		out = append(out, snippet{ID: "credentials", Title: "Client authentication",
			Note: "This proxy wants a bearer token: add it to the same CLI configuration.",
			Body: fmt.Sprintf("credentials %q {\n  token = \"<your token>\"\n}\n", strings.TrimSuffix(authorityOf(base), ":443"))})
	}
	return out
}

// networkMirrorSnippet is a provider_installation block sending what the
// mappings include to this proxy's mirror (and the rest to the origin);
// trustAll adds OpenTofu's trust_all_hashes, so that tofu records every
// platform's hashes the mirror reports.
func (s *Page) networkMirrorSnippet(base string, trustAll bool) string {
	var include []string
	for _, m := range s.cfg.Providers {
		if len(m.Include) == 0 {
			include = nil
			break
		}
		include = append(include, m.Include...)
	}
	var b strings.Builder
	b.WriteString("provider_installation {\n  network_mirror {\n")
	fmt.Fprintf(&b, "    url = %q\n", base+providers.MirrorPrefix)
	if trustAll {
		b.WriteString("    trust_all_hashes = true\n")
	}
	if len(include) > 0 {
		fmt.Fprintf(&b, "    include = %s\n", hclList(include))
	}
	b.WriteString("  }\n")
	if len(include) > 0 {
		fmt.Fprintf(&b, "  direct {\n    exclude = %s\n  }\n", hclList(include))
	}
	b.WriteString("}\n")
	return b.String()
}

// ociMirrorSnippet writes the mappings as oci_mirror blocks, when tofu
// accepts them (checked with tofu's own rules); otherwise a note says why
// not. tofu wants a template without ${hostname} to come with include
// patterns of one hostname: a mapping without any gets one for the hosts
// clients were seen asking for (or registry.opentofu.org), and the note
// says to adjust it.
func (s *Page) ociMirrorSnippet(seen []string) (body, note string) {
	var b strings.Builder
	added := false
	b.WriteString("provider_installation {\n")
	for _, m := range s.cfg.Providers {
		t := m.Template
		if strings.HasPrefix(t, oci.LayoutPrefix) {
			return "", "This proxy reads an OCI layout directory: clients cannot read it directly; use the network mirror."
		}
		include := m.Include
		if len(include) == 0 && !strings.Contains(t, "${hostname}") {
			include, added = hostPatterns(seen), true
		}
		fmt.Fprintf(&b, "  oci_mirror {\n    repository_template = %q\n", t)
		if len(include) > 0 {
			fmt.Fprintf(&b, "    include = %s\n", hclList(include))
		}
		if len(m.Exclude) > 0 {
			fmt.Fprintf(&b, "    exclude = %s\n", hclList(m.Exclude))
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	if _, err := cliconfig.ParseOCIMirrors([]byte(b.String()), "oci_mirror"); err != nil {
		return "", "These mappings are not oci_mirror blocks tofu accepts (" + err.Error() + "); use the network mirror."
	}
	note = "Clients then need credentials for the registry themselves (docker login), and trust in its certificate."
	if added {
		note += " A template without ${hostname} needs include patterns of one provider host: adjust the include to the host your configurations use."
	}
	return b.String(), note
}

// seenHosts are the provider hostnames clients asked for, sorted.
func seenHosts(providers []artifactView) []string {
	hosts := map[string]bool{}
	for _, p := range providers {
		if host, _, ok := strings.Cut(p.Address, "/"); ok {
			hosts[host] = true
		}
	}
	return slices.Sorted(maps.Keys(hosts))
}

// hostPatterns are include patterns for providers of one host: the first
// of hosts, or registry.opentofu.org.
func hostPatterns(hosts []string) []string {
	if len(hosts) > 0 {
		return []string{hosts[0] + "/*/*"}
	}
	return []string{"registry.opentofu.org/*/*"}
}

// moduleSnippet is a module call through this proxy's module registry.
// tofu and terraform refuse module hosts without a dot ("localhost"):
// 127.0.0.1 stands in for localhost, and another such name gets a note.
func (s *Page) moduleSnippet(r *http.Request) snippet {
	host := s.registryHost(r)
	note := "Module addresses are HOST/NAMESPACE/NAME/SYSTEM, with version constraints."
	name, port := host, ""
	if h, p, err := net.SplitHostPort(host); err == nil {
		name, port = h, ":"+p
	}
	switch {
	case name == "localhost" || name == "::1":
		host = "127.0.0.1" + port
		note += " Module registry hosts need a dot, so 127.0.0.1 stands for localhost here (this proxy's certificate must name it; --self-signed's does)."
	case !strings.Contains(name, "."):
		note += " OpenTofu and Terraform refuse module registry hosts without a dot, such as " + name + ": reach this proxy by a name with one."
	}
	return snippet{ID: "modules", Title: "Modules: this proxy as module registry", Note: note,
		Body: fmt.Sprintf("module \"network\" {\n  source  = %q\n  version = \"~> 1.0\"\n}\n", host+"/acme/network/aws")}
}

// registrySnippet shows the proxy as origin registry of its providers.
func (s *Page) registrySnippet(r *http.Request, base string, seenProviders []artifactView) snippet {
	host := s.registryHost(r)
	addr := host + "/acme/widgets"
	for _, p := range seenProviders {
		if strings.HasPrefix(p.Address, host+"/") {
			addr = p.Address
			break
		}
	}
	body := fmt.Sprintf("terraform {\n  required_providers {\n    %s = {\n      source = %q\n    }\n  }\n}\n", addr[strings.LastIndex(addr, "/")+1:], addr)
	note := "Providers under this proxy's host name, in your configuration; OpenTofu and Terraform discover /v1/providers/ and verify the publisher's signature."
	if rh, own := s.cfg.RegistryHostname, authorityOf(base); rh != "" && rh != own && rh != respond.HostOnly(own) {
		body = fmt.Sprintf("# CLI configuration: send %s to this proxy\nhost %q {\n  services = {\n    \"providers.v1\" = %q\n  }\n}\n\n", host, host, base+providers.ProvidersPath) + body
		note = "This proxy serves the registry protocol as " + host + ": a host block in the CLI configuration sends that host here."
	}
	return snippet{ID: "registry", Title: "OpenTofu and Terraform: this proxy as provider registry", Note: note, Body: body}
}

// registryHost is the host name providers and modules have through the
// registry protocols: --registry-hostname, or the host the client used.
func (s *Page) registryHost(r *http.Request) string {
	if s.cfg.RegistryHostname != "" {
		return s.cfg.RegistryHostname
	}
	return strings.ToLower(r.Host)
}

func hclList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	sort.Strings(q)
	return "[" + strings.Join(q, ", ") + "]"
}

// breakAfterSlashes lets a long address or template wrap after its
// slashes, on narrow screens (escaped, then <wbr> after each "/").
func breakAfterSlashes(s string) template.HTML {
	return template.HTML(strings.ReplaceAll(template.HTMLEscapeString(s), "/", "/<wbr>"))
}

// outcomeClass is the style of an audit outcome: ok for an artifact
// delivered, bad for a request refused, warn otherwise.
func outcomeClass(outcome string) string {
	switch {
	case outcome == audit.OutcomeDelivered || outcome == audit.OutcomeRedirected:
		return "ok"
	case isRefusal(outcome):
		return "bad"
	}
	return "warn"
}

// ago is a time as "3m ago".
func ago(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.UTC().Format(time.DateOnly)
}

// ServeUnknownPath answers a path nothing serves: 404 in the protocols'
// error form. A request shaped like a network mirror's, under another
// prefix, comes from a client configured with the mirror's URL cut short
// (no trailing slash: tofu resolves documents against the URL's parent)
// or with the base URL: the answer and the log say which URL to use.
func ServeUnknownPath(w http.ResponseWriter, r *http.Request) {
	msg := "no such path: see / for what this proxy serves"
	if misplacedMirrorRequest(r.URL.EscapedPath()) {
		msg = "no such path: this looks like a network mirror request made with the wrong URL; a network_mirror block's url is https://" + r.Host + providers.MirrorPrefix + " (with the trailing slash)"
		respond.Hint(r, "a client's network_mirror url lacks "+providers.MirrorPrefix+" or its trailing slash: it must be https://HOST"+providers.MirrorPrefix)
	}
	respond.WriteError(w, r, http.StatusNotFound, msg)
}

// misplacedMirrorRequest reports whether path is a network mirror
// document's (HOST/NAMESPACE/TYPE/index.json or VERSION.json) at the root
// or under /v1/ instead of under providers.MirrorPrefix.
func misplacedMirrorRequest(path string) bool {
	rest, ok := strings.CutPrefix(path, "/v1/")
	if !ok {
		rest = strings.TrimPrefix(path, "/")
	}
	_, err := providers.ParseMirrorPath(rest)
	return err == nil
}

// authorityOf is the host[:port] of an https base URL.
func authorityOf(base string) string {
	host, _, _ := strings.Cut(strings.TrimPrefix(base, "https://"), "/")
	return host
}

// publicProviders are the providers.v1 URLs the public registries'
// discovery documents name: a host block replaces discovery, so it must
// name every service clients use.
var publicProviders = map[string]string{
	names.OpenTofuRegistryHost: "https://" + names.OpenTofuRegistryHost + "/v1/providers/",
	"registry.terraform.io":    "https://registry.terraform.io/v1/providers/",
}

// moduleOriginsSnippet is the CLI configuration sending each origin's
// module addresses to this proxy at base.
func moduleOriginsSnippet(base string, origins []string) snippet {
	var b strings.Builder
	for _, o := range origins {
		fmt.Fprintf(&b, "host %q {\n  services = {\n    \"modules.v1\"   = %q\n", o, base+modules.ModuleOriginPath(o))
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
