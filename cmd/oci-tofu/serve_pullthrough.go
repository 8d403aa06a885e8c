package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/opentofu/tofudl/branding"
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/modulesource"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
)

// pullThroughHelp is the pull-through part of `serve --help`.
const pullThroughHelp = `
Pull-through (see docs/proxy.md, "Pull-through"): with --pull-through-origin, a provider
version the registry does not hold is fetched from its origin registry when a client first
asks for it: SHA256SUMS and its signature verified against the origin's keys, each package
streamed to the client while it is hashed and written to the registry, the remaining
platforms fetched in the background, and the version tagged once complete, exactly as
'oci-tofu mirror' would have pushed it. Only the listed origins are ever contacted:
  --provider-template 'ghcr.io/acme/providers/${hostname}/${namespace}/${type}'
  --pull-through-origin registry.opentofu.org --pull-through-origin registry.terraform.io
  --pull-through-origin tf.corp.example=https://tf.corp.example/api/providers/
(HOST alone: service discovery at https://HOST/.well-known/terraform.json; HOST=URL: the
providers.v1 URL itself, like a host block of the CLI configuration). Packages,
SHA256SUMS and OpenTofu release files are downloaded over https only, from the origins'
own hosts and the --pull-through-download-host hosts (default: GitHub's release hosts and
releases.hashicorp.com), redirects included. Origin credentials come from TF_TOKEN_<host>,
as for tofu, sent to that host only, over https. The registry protocol
(PROXY/NAMESPACE/TYPE) pulls from --pull-through-registry-origin, only under the proxy's
own host name: --registry-hostname, else --public-url's host (one of them is required; a
request's Host is the client's to choose). No path ever stores an
origin's release in, or lists it with, a repository holding pushed versions (docs/proxy.md,
"Pushed repositories"); keep ${hostname} in the templates pull-through stores into:
without it origins and the proxy's own names share repositories, and serve refuses to
start unless --pull-through-shared-repositories. --pull-through-tofu-api-url does the same
for OpenTofu releases on the TofuDL mirror. Modules (see docs/modules.md, "Pull-through"):
  --module-template 'ghcr.io/acme/modules/${hostname}/${namespace}/${name}/${system}'
  --pull-through-module-origin registry.opentofu.org
  --pull-through-module-origin registry.terraform.io --pull-through-module-source github.com
serve each origin's modules at /v1/origins/HOST/modules/ (a client's CLI configuration
names it in a host "HOST" block as modules.v1, so module addresses stay unchanged) and,
for the first origin, the PROXY/NAMESPACE/NAME/SYSTEM that --pull-through-own-modules
names (none by default: a private module's name is never sent to a public registry). A
version the registry does not hold is fetched on first download from that origin, its
source (git over HTTPS, .zip/.tar.gz archives) only from the origin itself and the
--pull-through-module-source hosts, packed as 'push module' packs it and stored under
--module-template (${hostname} being the origin's for the origin's paths). Pull-through
needs registry credentials allowed to push: without them serve refuses to start.`

// pullThroughFlags are serve's pull-through flags.
func pullThroughFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "pull-through-origin", Usage: "allow pulling providers through from this origin registry `HOST[=PROVIDERS_URL]` (repeatable)", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_ORIGINS"}},
		&cli.StringFlag{Name: "pull-through-registry-origin", Usage: "origin `HOST` (one of --pull-through-origin) of providers addressed under the proxy's own hostname (registry protocol); needs --registry-hostname or --public-url (a request's Host is the client's to choose)", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_REGISTRY_ORIGIN"}},
		&cli.StringFlag{Name: "pull-through-tofu-api-url", Usage: "pull OpenTofu releases through from this TofuDL api.json `URL` (e.g. " + branding.DefaultDownloadAPIURL + "); needs --tofu-repository", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_TOFU_API_URL"}},
		&cli.StringFlag{Name: "pull-through-tofu-download-url", Value: branding.DefaultMirrorURLTemplate, Usage: "download URL `TEMPLATE` of the TofuDL origin (https), with {{ .Version }} and {{ .Artifact }}; its host is allowed", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_TOFU_DOWNLOAD_URL"}},
		&cli.StringSliceFlag{Name: "pull-through-tofu-key", Usage: "armored public key `FILE` OpenTofu releases must be signed with (repeatable; default OpenTofu's)", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_TOFU_KEYS"}},
		&cli.StringSliceFlag{Name: "pull-through-tofu-platform", Usage: "store only this `os_arch`'s files of pulled OpenTofu releases (repeatable; default all files)", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_TOFU_PLATFORMS"}},
		&cli.DurationFlag{Name: "pull-through-failure-ttl", Value: time.Minute, Usage: "how long a release that failed to pull (unreachable or failing verification) is remembered before asking its origin again", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_FAILURE_TTL"}},
		&cli.DurationFlag{Name: "pull-through-listing-ttl", Value: 5 * time.Minute, Usage: "how long origins' version listings are cached", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_LISTING_TTL"}},
		&cli.DurationFlag{Name: "pull-through-metadata-timeout", Value: 10 * time.Second, Usage: "bound on each metadata read from an origin", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_METADATA_TIMEOUT"}},
		&cli.DurationFlag{Name: "pull-through-timeout", Value: 30 * time.Minute, Usage: "bound on pulling one whole release", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_TIMEOUT"}},
		&cli.IntFlag{Name: "pull-through-concurrency", Value: 4, Usage: "background downloads per release", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_CONCURRENCY"}},
		&cli.StringSliceFlag{Name: "pull-through-download-host", Value: cli.NewStringSlice(defaultDownloadHosts...), Usage: "allow downloading provider packages, SHA256SUMS and signatures, and OpenTofu release files from this `HOST[:PORT]` besides the origins' own hosts, redirects included (repeatable; giving it replaces the default; https only, nothing else is contacted)", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_DOWNLOAD_HOSTS"}},
		&cli.StringSliceFlag{Name: "pull-through-module-origin", Usage: "pull modules through from this origin module registry `HOST[=URL]` (URL: its modules.v1), served at /v1/origins/HOST/modules/ (repeatable; the first also for the modules under the proxy's hostname that --pull-through-own-modules names); needs --module-template", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_MODULE_ORIGIN"}},
		&cli.StringSliceFlag{Name: "pull-through-own-modules", Usage: "pull modules addressed under the proxy's own hostname that match `PATTERN` (NAMESPACE/NAME/SYSTEM, each a name or *) through from the first --pull-through-module-origin (repeatable; default none: they serve what the registry holds, and no origin is asked). A pattern with * never reaches a module the registry holds pushed versions of; only one naming the address exactly merges it with the origin's. Needs --registry-hostname or --public-url (a request's Host is the client's to choose)", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_OWN_MODULES"}},
		&cli.StringSliceFlag{Name: "pull-through-module-source", Usage: "allow fetching module sources (git over HTTPS, archives) from this `HOST[:PORT]` (repeatable; the module origin itself is always allowed)", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_MODULE_SOURCES"}},
		&cli.Int64Flag{Name: "pull-through-module-temp-disk", Value: modulesource.DefaultTempDisk, Usage: "temporary disk, in `BYTES`, that module fetches in progress hold together (downloads, git objects, trees, packages); a fetch that would pass it is answered 503", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_MODULE_TEMP_DISK"}},
		enforceExpirationFlag(),
		&cli.IntFlag{Name: "pull-through-max-releases", Value: 16, Usage: "releases pulled at once (more are answered 503)", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_MAX_RELEASES"}},
		&cli.BoolFlag{Name: "pull-through-shared-repositories", Usage: "start although a template pull-through stores into has no ${hostname}, so that the origins' addresses and the proxy's own share repositories (refused by default; warned). Pushed versions still keep every origin out of a repository, but one pull-through filled first takes later pushes as pulled through", EnvVars: []string{"OCI_TOFU_PULL_THROUGH_SHARED_REPOSITORIES"}},
	}
}

// pullThroughOptions reads the pull-through flags; nil when pull-through
// is off.
func pullThroughOptions(c *cli.Context) (*pullthrough.Options, error) {
	origins := c.StringSlice("pull-through-origin")
	tofuAPI := c.String("pull-through-tofu-api-url")
	modOrigins := c.StringSlice("pull-through-module-origin")
	if len(origins) == 0 && tofuAPI == "" && len(modOrigins) == 0 {
		return nil, checkPullThroughOff(c)
	}
	pt := &pullthrough.Options{
		Origins:         map[string]*url.URL{},
		RegistryOrigin:  strings.ToLower(c.String("pull-through-registry-origin")),
		FailureTTL:      c.Duration("pull-through-failure-ttl"),
		ListingTTL:      c.Duration("pull-through-listing-ttl"),
		MetadataTimeout: c.Duration("pull-through-metadata-timeout"),
		Timeout:         c.Duration("pull-through-timeout"),
		Concurrency:     c.Int("pull-through-concurrency"),
		MaxPulls:        c.Int("pull-through-max-releases"),
		DownloadHosts:   c.StringSlice("pull-through-download-host"),
		// Provider signatures as `mirror` judges them (signatures.go).
		EnforceGPGExpiration: enforceExpiration(c),
	}
	for _, o := range origins {
		host, base, err := pullthrough.ParseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("--pull-through-origin %s: %w", o, err)
		}
		pt.Origins[host] = base
	}
	transport, err := oci.NewTransport(oci.Options{CAFile: c.String("ca-file")})
	if err != nil {
		return nil, err
	}
	pt.Client = origin.NewClient(transport)
	if err := readModulePullThrough(c, pt, modOrigins, transport); err != nil {
		return nil, err
	}
	if tofuAPI != "" {
		if pt.Tofu, err = tofuPullOrigin(c, tofuAPI); err != nil {
			return nil, err
		}
	}
	return pt, nil
}

// checkPullThroughOff refuses the flags that refine a pull-through that
// is off.
func checkPullThroughOff(c *cli.Context) error {
	switch {
	case c.String("pull-through-registry-origin") != "":
		return fmt.Errorf("--pull-through-registry-origin needs --pull-through-origin")
	case len(c.StringSlice("pull-through-module-source")) > 0:
		return fmt.Errorf("--pull-through-module-source needs --pull-through-module-origin")
	case len(c.StringSlice("pull-through-own-modules")) > 0:
		return fmt.Errorf("--pull-through-own-modules needs --pull-through-module-origin")
	}
	return nil
}

// readModulePullThrough reads the module origins, their sources, the
// temporary disk their fetches share and --pull-through-own-modules.
func readModulePullThrough(c *cli.Context, pt *pullthrough.Options, origins []string, transport http.RoundTripper) error {
	if len(origins) > 0 {
		disk := c.Int64("pull-through-module-temp-disk")
		if disk <= 0 {
			return fmt.Errorf("--pull-through-module-temp-disk must be positive")
		}
		modulesource.SetTempDiskBudget(disk)
	}
	for _, o := range origins {
		f, err := moduleFetcher(o, c.StringSlice("pull-through-module-source"), transport)
		if err != nil {
			return err
		}
		pt.Modules = append(pt.Modules, f)
	}
	for _, s := range c.StringSlice("pull-through-own-modules") {
		p, err := pullthrough.ParseModulePattern(s)
		if err != nil {
			return fmt.Errorf("--pull-through-own-modules: %w", err)
		}
		pt.OwnModules = append(pt.OwnModules, p)
	}
	return nil
}

// defaultDownloadHosts are where the public registries' provider
// releases and OpenTofu's own are downloaded from: GitHub releases (and
// the hosts they redirect to) and releases.hashicorp.com.
var defaultDownloadHosts = []string{"github.com", "objects.githubusercontent.com", "release-assets.githubusercontent.com", "releases.hashicorp.com"}

// moduleFetcher reads the module origin flags.
func moduleFetcher(o string, sources []string, transport http.RoundTripper) (*modulesource.Fetcher, error) {
	host, base, err := pullthrough.ParseOrigin(o)
	if err != nil {
		return nil, fmt.Errorf("--pull-through-module-origin %s: %w", o, err)
	}
	f, err := modulesource.New(modulesource.Config{Registry: host, Base: base, Sources: sources, Transport: transport})
	if err != nil {
		return nil, fmt.Errorf("--pull-through-module-origin/--pull-through-module-source: %w", err)
	}
	return f, nil
}

// tofuPullOrigin reads the TofuDL origin flags.
func tofuPullOrigin(c *cli.Context, api string) (*ingest.TofuOrigin, error) {
	keys, err := tofuKeyrings(c.StringSlice("pull-through-tofu-key"))
	if err != nil {
		return nil, err
	}
	platforms, err := parsePlatforms(c.StringSlice("pull-through-tofu-platform"))
	if err != nil {
		return nil, fmt.Errorf("--pull-through-tofu-platform: %w", err)
	}
	return ingest.NewTofuOrigin(api, c.String("pull-through-tofu-download-url"), keys, platforms, oci.MaxPackageSize)
}

// checkPullThrough refuses to start a pull-through proxy the registry
// does not let push.
func checkPullThrough(ctx context.Context, srv *proxy.Server) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return srv.CheckPullThrough(ctx)
}
