// Package pullthrough fetches what the registry does not hold from
// allow-listed origins on first use: it reads origin listings and
// releases (cached, failures remembered), verifies them as `oci-tofu
// mirror` does (modules: fetched as tofu fetches module sources,
// protocol/modulesource, and packed as `push module` packs them), downloads every file once into a temporary release that
// any number of readers follow while it grows, and stores the release in
// exactly the layout `mirror` writes, tagged only when complete. It sits
// beside protocol/store: the proxy asks the store first and pull-through
// for what the store says is not held; it knows nothing of HTTP handlers
// and returns classified errors (Error) that the proxy maps to statuses.
// See docs/proxy.md, "Pull-through".
package pullthrough

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/modulesource"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// Options configure pull-through: what the registry does not hold is
// fetched from allow-listed origins on first use, verified as `oci-tofu
// mirror` verifies it, stored in exactly the layout `mirror` writes, and
// served while it streams in; later requests are served from the registry,
// also while the origin is down.
type Options struct {
	// Origins are the only origin registries ever contacted for providers,
	// by hostname as provider addresses write it (lower case, with a port
	// when not 443). A nil URL means OpenTofu's service discovery
	// (https://HOST/.well-known/terraform.json, providers.v1); a URL is the
	// providers.v1 base itself, as a `host` block of a CLI configuration
	// gives it.
	Origins map[string]*url.URL
	// RegistryOrigin is the origin of the providers served through the
	// Provider Registry Protocol, whose addresses carry the proxy's own
	// hostname: PROXY/NAMESPACE/TYPE is pulled from
	// RegistryOrigin/NAMESPACE/TYPE. Empty: the registry protocol serves
	// only what the registry holds. It must be one of Origins.
	RegistryOrigin string
	// Tofu, when set, is the TofuDL origin of OpenTofu releases for the
	// TofuDL mirror (which needs a TofuDL repository).
	Tofu *ingest.TofuOrigin
	// EnforceGPGExpiration refuses provider releases signed by an expired
	// key, subkey or signature, as OpenTofu does with
	// OPENTOFU_ENFORCE_GPG_EXPIRATION=true (and `mirror
	// --enforce-gpg-expiration`); by default they are taken with a warning
	// in the log.
	EnforceGPGExpiration bool
	// DownloadHosts are the hosts (HOST or HOST:PORT, 443 by default)
	// provider packages, SHA256SUMS and signatures, and OpenTofu release
	// files may be downloaded from besides the origins' own hosts (each
	// origin's, its providers.v1 URL's, the TofuDL API's and download URL
	// template's), redirects included. Nothing else is ever contacted, and
	// over https only (serve's default names where the public registries'
	// releases are: GitHub and releases.hashicorp.com).
	DownloadHosts []string
	// Client reaches origins (default: system trust plus SSL_CERT_FILE,
	// TF_TOKEN_<host> credentials as OpenTofu reads them). New restricts it
	// to the origins' hosts and DownloadHosts (origin.Client.Restrict).
	Client *origin.Client
	// FailureTTL is how long an origin release that could not be fetched or
	// failed verification is remembered, and answered with its error
	// without asking the origin again (default 1m).
	FailureTTL time.Duration
	// ListingTTL is how long an origin's version listing is fresh (default
	// 5m); it is then served stale for as long while one background read
	// revalidates it.
	ListingTTL time.Duration
	// MetadataTimeout bounds each read of an origin's listings, download
	// answers, SHA256SUMS and signature (default 10s, OpenTofu's own
	// registry client timeout).
	MetadataTimeout time.Duration
	// Concurrency bounds the background downloads of one release (default 4).
	Concurrency int
	// MaxPulls bounds the releases being pulled at once (default 16);
	// beyond it further releases are refused as busy.
	MaxPulls int
	// Timeout bounds the pull of one whole release (default 30m).
	Timeout time.Duration
	// TempDir holds releases being assembled (default os.TempDir()).
	TempDir string
	// MaxFileSize bounds each downloaded file (default oci.MaxPackageSize).
	MaxFileSize int64
	// LeaseTTL is how long a replica's claim on a release it pulls lasts
	// without renewal (renewed every third of it; default 10s): a replica
	// that dies holds up the others this long at most.
	LeaseTTL time.Duration
	// SharedWait bounds how long a request waits for another replica's
	// pull of the release (default 5m; the request's own deadline too).
	SharedWait time.Duration
	// Modules, when set, are the origin module registries the modules
	// the registry does not hold are fetched from, each only ever
	// contacting the hosts it allows, at most one per hostname. The proxy
	// serves each under a path of its own (ORIGIN/NS/NAME/SYSTEM); the
	// first is also the origin of the module addresses under the proxy's
	// own hostname that OwnModules covers (PROXY/NS/NAME/SYSTEM from
	// FIRST/NS/NAME/SYSTEM).
	Modules []*modulesource.Fetcher
	// OwnModules are the module addresses under the proxy's own hostname
	// that may be pulled through from the first of Modules (own.go); none
	// by default: own-host addresses serve what the registry holds.
	OwnModules []ModulePattern
	// Attest, when set, signs and attests each release pulled, as `mirror
	// --attest-key` does, after it is pushed and before it counts as
	// stored: a pull whose attestation fails has failed.
	Attest *ingest.Attestation
}

// Check refuses a configuration that cannot work: providers and tofu say
// whether there is somewhere to store pulled providers (a provider
// mapping) and OpenTofu releases (a TofuDL repository).
func (o *Options) Check(providers, tofu, modules bool) error {
	if len(o.Origins) == 0 && o.Tofu == nil && len(o.Modules) == 0 {
		return errors.New("pull-through: give at least one origin registry, a module origin or a TofuDL origin")
	}
	if len(o.Modules) > 0 && !modules {
		return errors.New("pull-through of modules needs a module template (where pulled modules are stored)")
	}
	seen := map[string]bool{}
	for _, f := range o.Modules {
		if f == nil || seen[f.Registry()] {
			return errors.New("pull-through: each origin module registry may be given once")
		}
		seen[f.Registry()] = true
	}
	if len(o.OwnModules) > 0 && len(o.Modules) == 0 {
		return errors.New("pull-through of modules under the proxy's own hostname needs a module origin")
	}
	if len(o.Origins) > 0 && !providers {
		return errors.New("pull-through of providers needs a provider template (where pulled providers are stored)")
	}
	if o.Tofu != nil && !tofu {
		return errors.New("pull-through of OpenTofu releases needs a TofuDL repository (where they are stored)")
	}
	for host := range o.Origins {
		if !names.ValidHostname(host) {
			return fmt.Errorf("pull-through: %q is not a registry hostname", host)
		}
	}
	if o.RegistryOrigin != "" {
		if _, ok := o.Origins[o.RegistryOrigin]; !ok {
			return fmt.Errorf("pull-through: the registry protocol's origin %s is not one of the allowed origins", o.RegistryOrigin)
		}
	}
	if _, err := o.allowedHosts(); err != nil {
		return err
	}
	return nil
}

// allowedHosts are the only hosts the origin client may contact: each
// origin's host and providers.v1 URL's, the TofuDL origin's API and
// download hosts, and DownloadHosts.
func (o *Options) allowedHosts() (origin.Hosts, error) {
	var hosts []string
	for host, base := range o.Origins {
		hosts = append(hosts, host)
		if base != nil {
			hosts = append(hosts, base.Host)
		}
	}
	if o.Tofu != nil {
		hosts = append(hosts, o.Tofu.Hosts()...)
	}
	allowed, err := origin.NewHosts(append(hosts, o.DownloadHosts...)...)
	if err != nil {
		return nil, fmt.Errorf("pull-through: a download host: %w", err)
	}
	return allowed, nil
}

// withDefaults fills in what is left unset.
func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.FailureTTL, time.Minute)
	def(&o.ListingTTL, 5*time.Minute)
	def(&o.Timeout, 30*time.Minute)
	def(&o.MetadataTimeout, 10*time.Second)
	def(&o.LeaseTTL, 10*time.Second)
	def(&o.SharedWait, 5*time.Minute)
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.MaxPulls <= 0 {
		o.MaxPulls = 16
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = oci.MaxPackageSize
	}
	if o.Client == nil {
		o.Client = origin.NewClient(nil)
	}
	return o
}

// ParseOrigin reads an origin as --pull-through-origin and
// --pull-through-module-origin give it: HOST, or HOST=URL with the
// origin's providers.v1 or modules.v1 URL (absolute, https); the host is
// lower-cased, and nil is the URL service discovery finds.
func ParseOrigin(s string) (string, *url.URL, error) {
	host, raw, withURL := strings.Cut(strings.TrimSpace(s), "=")
	host = strings.ToLower(host)
	if !names.ValidHostname(host) {
		return "", nil, fmt.Errorf("%q is not a registry hostname (as provider addresses write it)", host)
	}
	if !withURL {
		return host, nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "", nil, fmt.Errorf("the service URL (providers.v1 or modules.v1) must be an absolute https:// URL")
	}
	return host, u, nil
}
