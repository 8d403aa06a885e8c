package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/gcfloor"
	"github.com/oci-tofu/oci-tofu/protocol/notify"
	"github.com/oci-tofu/oci-tofu/protocol/policyfile"
	"github.com/oci-tofu/oci-tofu/protocol/preflight"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/servercreds"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve providers, modules and OpenTofu releases from OCI repositories (HTTPS)",
		Description: `Serves, for OpenTofu, Terraform and TofuDL:
  /.well-known/terraform.json      service discovery (providers.v1, modules.v1)
  /v1/mirror/                      Provider Network Mirror Protocol    (--provider-template)
  /v1/providers/                   Provider Registry Protocol, the proxy as origin registry
  /v1/archives/                    package downloads, streamed from the registry and verified
  /v1/modules/                     Module Registry Protocol            (--module-template)
  /v1/module-archives/             module package downloads, streamed and verified
  /tofu/api.json, /tofu/download/  TofuDL mirror of OpenTofu releases  (--tofu-repository)
  /readyz, /livez                  readiness (registries reachable, not draining), liveness
  /healthz, /metrics               answers while serving (as /livez), Prometheus metrics

--provider-template maps a provider address to a repository, with the syntax of
tofu's oci_mirror repository_template: ${hostname}, ${namespace}, ${type}, e.g.
ghcr.io/acme/providers/${namespace}/${type} or oci-layout:/srv/oci/${namespace}/${type}.
--module-template maps a module address HOST/NAMESPACE/NAME/SYSTEM to a repository of
module packages (oci-tofu push module) with ${namespace}, ${name}, ${system} (and
${hostname}), e.g. ghcr.io/acme/modules/${namespace}/${name}/${system}; tags are versions.
Repeat it to merge several: a module's versions are those of every template, each
version served from the first template (in order) holding it; pull-through stores
into the first.
--tofu-repository is the repository of OpenTofu releases (oci-tofu push tofu). Give at
least one of the three.

Every flag can also be set by its OCI_TOFU_… environment variable. The registry
password comes from OCI_TOFU_PASSWORD or --password-stdin. See docs/proxy.md.
` + pullThroughHelp,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: ":8443", Usage: "`ADDRESS` to listen on, host:port", EnvVars: []string{"OCI_TOFU_LISTEN"}},
			&cli.BoolFlag{Name: "check", Usage: "check the configuration and the registries it names (reachability, TLS, credentials, a sample repository per mapping), print a table, and exit: 0 when nothing failed"},
			&cli.BoolFlag{Name: "json", Usage: "with --check: print the checks as JSON"},
			&cli.StringSliceFlag{Name: "check-provider", Usage: "with --check: a provider `ADDRESS` (host/namespace/type) whose repository to look for, for each mapping that admits it (repeatable)"},
			&cli.StringSliceFlag{Name: "check-module", Usage: "with --check: a module `ADDRESS` (host/namespace/name/system) whose repository to look for (repeatable)"},
			&cli.StringFlag{Name: "tls-cert", Usage: "PEM certificate (chain) `FILE`", EnvVars: []string{"OCI_TOFU_TLS_CERT"}},
			&cli.StringFlag{Name: "tls-key", Usage: "PEM private key `FILE`", EnvVars: []string{"OCI_TOFU_TLS_KEY"}},
			&cli.BoolFlag{Name: "self-signed", Usage: "generate a throw-away self-signed certificate (trials only)", EnvVars: []string{"OCI_TOFU_SELF_SIGNED"}},
			&cli.StringFlag{Name: "self-signed-cert-out", Value: "oci-tofu-selfsigned.pem", Usage: "where --self-signed writes its certificate, for clients' SSL_CERT_FILE", EnvVars: []string{"OCI_TOFU_SELF_SIGNED_CERT_OUT"}},
			&cli.StringSliceFlag{Name: "self-signed-host", Value: cli.NewStringSlice("localhost", "127.0.0.1", "::1"), Usage: "host names and IPs the self-signed certificate is valid for", EnvVars: []string{"OCI_TOFU_SELF_SIGNED_HOSTS"}},
			&cli.BoolFlag{Name: "insecure-no-tls", Usage: "serve plain HTTP, only behind a TLS-terminating proxy or ingress (clients require HTTPS)", EnvVars: []string{"OCI_TOFU_INSECURE_NO_TLS"}},
			&cli.StringFlag{Name: "public-url", Usage: "`URL` clients reach the proxy by, https://host[:port][/prefix], the base of every URL it hands out (default: https and the Host of each request when serving TLS; relative URLs with --insecure-no-tls)", EnvVars: []string{"OCI_TOFU_PUBLIC_URL"}},
			&cli.StringFlag{Name: "registry-hostname", Usage: "${hostname} for the registry protocol (default: the host name clients use to reach the proxy)", EnvVars: []string{"OCI_TOFU_REGISTRY_HOSTNAME"}},
			&cli.StringFlag{Name: "signing-key", Usage: "armored private key `FILE` to sign generated SHA256SUMS for releases without a publisher signature", EnvVars: []string{"OCI_TOFU_SIGNING_KEY"}},
			&cli.StringFlag{Name: "auth-token-file", Usage: "`FILE` of client bearer tokens, one per line; enables client authentication and signed archive URLs", EnvVars: []string{"OCI_TOFU_AUTH_TOKEN_FILE"}},
			&cli.BoolFlag{Name: "registry-decides", Usage: "a client's bearer token is its registry credential (USERNAME:PASSWORD, as docker login takes it): the registry decides what it may read, asked before anything is served to it (docs/proxy.md \"The registry decides\")", EnvVars: []string{"OCI_TOFU_REGISTRY_DECIDES"}},
			&cli.DurationFlag{Name: "registry-confirm-ttl", Value: time.Minute, Usage: "with --registry-decides, how long the registry's yes is kept per credential and repository (a no: a tenth of it)", EnvVars: []string{"OCI_TOFU_REGISTRY_CONFIRM_TTL"}},
			&cli.StringFlag{Name: "audit-log", Usage: "write the audit trail to `FILE` (JSON lines: every artifact delivered, every request refused; docs/audit.md), rotated at --audit-max-size; \"-\" writes it to standard output", EnvVars: []string{"OCI_TOFU_AUDIT_LOG"}},
			&cli.Int64Flag{Name: "audit-max-size", Value: audit.DefaultMaxBytes, Usage: "`BYTES` at which the audit file is rotated (whole MiB)", EnvVars: []string{"OCI_TOFU_AUDIT_MAX_SIZE"}},
			&cli.IntFlag{Name: "audit-max-files", Value: audit.DefaultMaxFiles, Usage: "rotated audit files kept beside the current one", EnvVars: []string{"OCI_TOFU_AUDIT_MAX_FILES"}},
			&cli.BoolFlag{Name: "audit-documents", Usage: "audit metadata documents too, one event each (by default they are only counted in metrics)", EnvVars: []string{"OCI_TOFU_AUDIT_DOCUMENTS"}},
			&cli.StringFlag{Name: "notifications-secret-file", Usage: "`FILE` holding the secret registries send (Authorization: Bearer SECRET) to notify the proxy of pushes at " + notify.Path + ", which then shows them at once (docs/notifications.md)", EnvVars: []string{"OCI_TOFU_NOTIFICATIONS_SECRET_FILE"}},
			&cli.StringFlag{Name: "events-file", Usage: "webhook subscriptions `FILE` (YAML or JSON): policy denials and warnings and pull-through stores are POSTed to its endpoints as signed CloudEvents; reloaded when it changes and on SIGHUP (docs/events.md)", EnvVars: []string{"OCI_TOFU_EVENTS_FILE"}},
			&cli.StringFlag{Name: "url-signing-key-file", Usage: "`FILE` holding the HMAC key for archive URLs (share between replicas; default random)", EnvVars: []string{"OCI_TOFU_URL_SIGNING_KEY_FILE"}},
			&cli.DurationFlag{Name: "archive-url-ttl", Value: time.Hour, Usage: "lifetime of signed archive URLs", EnvVars: []string{"OCI_TOFU_ARCHIVE_URL_TTL"}},
			&cli.DurationFlag{Name: "tag-ttl", Value: 30 * time.Second, Usage: "how long tag lists, and the documents built from them, are fresh", EnvVars: []string{"OCI_TOFU_TAG_TTL"}},
			&cli.DurationFlag{Name: "resolve-ttl", Value: 5 * time.Minute, Usage: "how long what a version tag names is cached (a re-tagged version is seen within it)", EnvVars: []string{"OCI_TOFU_RESOLVE_TTL"}},
			&cli.DurationFlag{Name: "max-stale", Value: 5 * time.Minute, Usage: "how long past their TTL documents are still served while being revalidated in the background", EnvVars: []string{"OCI_TOFU_MAX_STALE"}},
			&cli.DurationFlag{Name: "failure-ttl", Value: 5 * time.Second, Usage: "how long a registry failure is remembered before asking again", EnvVars: []string{"OCI_TOFU_FAILURE_TTL"}},
			&cli.IntFlag{Name: "cache-entries", Value: 65536, Usage: "most entries of each in-memory cache", EnvVars: []string{"OCI_TOFU_CACHE_ENTRIES"}},
			&cli.Int64Flag{Name: "cache-bytes", Value: 256 << 20, Usage: "about the most memory the in-memory caches hold together, in bytes (a sixteenth of it is the garbage collector's floor while the live heap is smaller; GOGC turns that off)", EnvVars: []string{"OCI_TOFU_CACHE_BYTES"}},
			&cli.IntFlag{Name: "registry-concurrency", Value: store.DefaultConcurrency, Usage: "most requests in flight to one registry (also the most one listing reads at once: lower it for a registry that throttles)", EnvVars: []string{"OCI_TOFU_REGISTRY_CONCURRENCY"}},
			&cli.StringSliceFlag{Name: "denied-as-missing", Usage: "registry `HOST` (or *) that answers 401/403 for repositories that do not exist, like ghcr.io: the proxy then answers 404 for them (repeatable)", EnvVars: []string{"OCI_TOFU_DENIED_AS_MISSING"}},
			&cli.DurationFlag{Name: "upstream-timeout", Value: 30 * time.Second, Usage: "bound on each metadata call to the registry", EnvVars: []string{"OCI_TOFU_UPSTREAM_TIMEOUT"}},
			&cli.DurationFlag{Name: "stall-timeout", Value: 60 * time.Second, Usage: "abort an archive download without progress, or an --mcp response the client has not taken, after this long", EnvVars: []string{"OCI_TOFU_STALL_TIMEOUT"}},
			&cli.DurationFlag{Name: "shutdown-delay", Value: 5 * time.Second, Usage: "on SIGTERM, how long to keep serving with /readyz failing before closing the listener (time for load balancers to stop sending requests)", EnvVars: []string{"OCI_TOFU_SHUTDOWN_DELAY"}},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 30 * time.Second, Usage: "how long to let running requests finish on SIGTERM", EnvVars: []string{"OCI_TOFU_SHUTDOWN_TIMEOUT"}},
			&cli.BoolFlag{Name: "mcp", Usage: "serve the assistants' MCP tools at /mcp (Streamable HTTP; off loopback it needs TLS and client authentication; docs/assistants.md)", EnvVars: []string{"OCI_TOFU_MCP"}},
			&cli.StringSliceFlag{Name: "mcp-allow-origin", Usage: "browser `ORIGIN` (https://host[:port]) allowed to call /mcp beside the proxy's own (repeatable)", EnvVars: []string{"OCI_TOFU_MCP_ALLOW_ORIGIN"}},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "text or json", EnvVars: []string{"OCI_TOFU_LOG_FORMAT"}},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error", EnvVars: []string{"OCI_TOFU_LOG_LEVEL"}},
		}, append(append(append(servedSourceFlags(), pullThroughFlags()...), requireAttestationFlag(), trustedRootFlag(), requireNotationFlag(), serveAttestKeyFlag(), policyFlag(), vulnDBFlag(), archiveDeliveryFlag()), append(sharedCacheFlags(), registryFlags()...)...)...),
		Action: serve,
	}
}

// gcFloorBytes is the garbage the collector may let accumulate while the
// live heap is smaller (protocol/gcfloor): a sixteenth of --cache-bytes
// (16 MiB by default), a small part of the memory the operator gave the
// proxy for its caches, whose garbage a full cache doubles anyway at
// GOGC=100. Measured in docs/benchmarks.md ("The collector's floor"):
// 16 MiB saves as much CPU per warm answer as 32 MiB, 8 MiB less.
func gcFloorBytes(cacheBytes int64) int64 { return cacheBytes / 16 }

func serve(c *cli.Context) error {
	if err := wantArgs(c, 0, 0); err != nil {
		return err
	}
	logger, lines, err := proxy.NewLogger(c.App.ErrWriter, c.String("log-format"), c.String("log-level"))
	if err != nil {
		return err
	}
	defer lines.Close()
	opts, pf, err := serveOptions(c, logger)
	if err != nil {
		return err
	}
	if c.Bool("check") {
		return runCheck(c, opts)
	}
	if pf != nil {
		pf.Follow(c.Context) // reloaded when it changes, and on SIGHUP
	}
	if c.Bool("json") {
		return usageError(c, "--json goes with --check")
	}
	trail, err := openAuditLog(c, logger)
	if err != nil {
		return err
	}
	if trail != nil {
		defer trail.Close() // after the last request: flushed on shutdown and SIGTERM
		opts.Audit, opts.AuditDocuments = trail, c.Bool("audit-documents")
	}
	return startServing(c, opts, logger)
}

// startServing starts the proxy on --listen and serves until the
// command's context ends (a signal), then drains for --shutdown-delay and
// shuts down within --shutdown-timeout (proxy.Server.ServeUntil); once it
// serves, the registries are probed (preflight.Probe).
func startServing(c *cli.Context, opts proxy.Options, logger *slog.Logger) error {
	srv, err := proxy.New(opts)
	if err != nil {
		return err
	}
	if err := checkPullThrough(c.Context, srv); err != nil { // serve_pullthrough.go
		return err
	}
	ln, scheme, err := listen(c, srv, logger)
	if err != nil {
		return err
	}
	gcFloor := gcFloorBytes(c.Int64("cache-bytes"))
	stopGCFloor, active := gcfloor.Floor(gcFloor)
	defer stopGCFloor()
	if !active {
		gcFloor = 0
	}
	logger.Info("serving", "address", ln.Addr().String(), "scheme", scheme, "provider_template", c.String("provider-template"),
		"module_templates", c.StringSlice("module-template"), "tofu_repository", c.String("tofu-repository"),
		"client_auth", len(opts.AuthTokens) > 0, "signing_key", opts.Signer != nil,
		"pull_through_origins", c.StringSlice("pull-through-origin"), "pull_through_tofu", c.String("pull-through-tofu-api-url"),
		"require_attestation_keys", len(opts.RequireAttestation), "require_notation_policies", len(opts.RequireTrust), "policy_rules", opts.Policy.Current().Rules(), "gc_floor_bytes", gcFloor)
	return srv.ServeUntil(c.Context, ln, proxy.Lifecycle{
		ShutdownDelay:   c.Duration("shutdown-delay"),
		ShutdownTimeout: c.Duration("shutdown-timeout"),
		ErrorLog:        servercreds.HandshakeLog(logger),
		Started:         func(ctx context.Context) { preflight.Probe(ctx, preflightConfig(srv.Client(), opts, ""), logger) },
	})
}

// listen opens --listen, with TLS unless --insecure-no-tls (plain HTTP
// behind a TLS-terminating proxy); a certificate from files is reloaded
// when they change, counted in srv's metrics, and readiness fails while
// the one served has expired (docs/proxy.md, "Probes").
func listen(c *cli.Context, srv *proxy.Server, logger *slog.Logger) (net.Listener, string, error) {
	tlsConfig, err := serverTLS(c, func(r *servercreds.Reloader) {
		r.Logger, r.OnReload = logger, srv.ObserveCertificateReload
		srv.Probes().AddCondition("tls certificate", r.Usable)
		if err := srv.ObserveCertificateExpiry(func() time.Time { return r.Certificate().Leaf.NotAfter }); err != nil {
			logger.Warn("the certificate's expiry is not a metric", "error", err.Error())
		}
	})
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return nil, "", err
	}
	if tlsConfig == nil {
		return ln, "http", nil
	}
	return tls.NewListener(ln, tlsConfig), "https", nil
}

// serveOptions reads and checks everything serve is given, before it
// listens or reaches any registry.
func serveOptions(c *cli.Context, logger *slog.Logger) (proxy.Options, *policyfile.File, error) {
	opts := serveCacheOptions(c, logger)
	if err := readServedSources(c, &opts); err != nil { // served.go
		return proxy.Options{}, nil, err
	}
	ro, err := registryOptions(c)
	if err != nil {
		return proxy.Options{}, nil, err
	}
	ro.Etiquette = &oci.Etiquette{MaxConcurrent: c.Int("registry-concurrency")}
	opts.Store.Concurrency = c.Int("registry-concurrency") // a listing may use every slot
	opts.Registry = ro
	if c.Bool("mcp") {
		host, _, _ := net.SplitHostPort(c.String("listen"))
		opts.MCP = &proxy.MCP{Loopback: isLoopback(host), PlainHTTP: c.Bool("insecure-no-tls"), Origins: c.StringSlice("mcp-allow-origin")}
	}
	hc := registryHints(ro, "--provider-template")
	opts.Hint = func(err error) string { return hint(err, hc) }
	if opts.PullThrough, err = pullThroughOptions(c); err != nil { // serve_pullthrough.go
		return proxy.Options{}, nil, err
	}
	if err := pullthrough.CheckOwnHostname(opts.PullThrough, opts.RegistryHostname != "" || opts.PublicURL != ""); err != nil {
		return proxy.Options{}, nil, err
	}
	pf, err := readServeChecks(c, &opts)
	if err != nil {
		return proxy.Options{}, nil, err
	}
	if err := readSharedCache(c, &opts); err != nil { // serve_shared.go
		return proxy.Options{}, nil, err
	}
	if err := pullthrough.CheckShared(opts.PullThrough, opts.ProviderMappings, opts.ModuleMappings, c.Bool("pull-through-shared-repositories"), logger); err != nil {
		return proxy.Options{}, nil, err
	}
	return opts, pf, nil
}

// readServeChecks reads what serve checks before it serves: the secrets,
// the admission rule (admission.go), the policy (serve_policy.go) and
// how archives are delivered (serve_delivery.go).
func readServeChecks(c *cli.Context, opts *proxy.Options) (*policyfile.File, error) {
	if err := readServeSecrets(c, opts); err != nil {
		return nil, err
	}
	if err := readRequireAttestation(c, opts, opts.Logger); err != nil {
		return nil, err
	}
	pf, err := readPolicy(c, opts, opts.Logger)
	if err != nil {
		return nil, err
	}
	return pf, readArchiveDelivery(c, opts)
}

// serveCacheOptions are the options the cache and timeout flags give.
func serveCacheOptions(c *cli.Context, logger *slog.Logger) proxy.Options {
	return proxy.Options{
		RegistryHostname: c.String("registry-hostname"),
		PublicURL:        c.String("public-url"),
		ArchiveURLTTL:    c.Duration("archive-url-ttl"),
		Store: store.Options{
			TagTTL:          c.Duration("tag-ttl"),
			ResolveTTL:      c.Duration("resolve-ttl"),
			MaxStale:        c.Duration("max-stale"),
			FailureTTL:      c.Duration("failure-ttl"),
			CacheEntries:    c.Int("cache-entries"),
			DeniedAsMissing: c.StringSlice("denied-as-missing"),
			Timeout:         c.Duration("upstream-timeout"),
		},
		CacheBytes:   c.Int64("cache-bytes"),
		StallTimeout: c.Duration("stall-timeout"),
		Logger:       logger,
		Version:      version,
	}
}

// readServeSecrets reads the signing key, the client tokens and the URL
// signing key from their files.
func readServeSecrets(c *cli.Context, opts *proxy.Options) error {
	var err error
	if f := c.String("signing-key"); f != "" {
		if opts.Signer, err = pgp.LoadSigner(f); err != nil {
			return err
		}
	}
	if f := c.String("auth-token-file"); f != "" {
		if opts.AuthTokens, err = servercreds.ReadTokens(f); err != nil {
			return err
		}
	}
	opts.RegistryDecides, opts.RegistryConfirmTTL = c.Bool("registry-decides"), c.Duration("registry-confirm-ttl")
	if f := c.String("url-signing-key-file"); f != "" {
		if opts.URLSigningKey, err = servercreds.ReadURLSigningKey(f); err != nil {
			return err
		}
	}
	if f := c.String("notifications-secret-file"); f != "" {
		secret, err := servercreds.ReadNotificationsSecret(f)
		if err != nil {
			return fmt.Errorf("--notifications-secret-file: %w", err)
		}
		opts.Notifications = &proxy.Notifications{Secret: secret}
	}
	opts.EventsFile = c.String("events-file")
	return nil
}

// serverTLS loads or generates the server certificate; nil means plain
// HTTP. A certificate from files is served by a servercreds.Reloader,
// which watch sets up before it is used.
func serverTLS(c *cli.Context, watch func(*servercreds.Reloader)) (*tls.Config, error) {
	certFile, keyFile := c.String("tls-cert"), c.String("tls-key")
	selfSigned, noTLS := c.Bool("self-signed"), c.Bool("insecure-no-tls")
	n := 0
	for _, b := range []bool{certFile != "" || keyFile != "", selfSigned, noTLS} {
		if b {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("give exactly one of --tls-cert/--tls-key, --self-signed or --insecure-no-tls: OpenTofu and Terraform talk to mirrors and registries over HTTPS only")
	}
	var cert tls.Certificate
	var err error
	switch {
	case noTLS:
		return nil, nil
	case selfSigned:
		out := c.String("self-signed-cert-out")
		if cert, err = servercreds.SelfSigned(c.StringSlice("self-signed-host"), out); err != nil {
			return nil, err
		}
		fmt.Fprintf(c.App.ErrWriter, "oci-tofu: self-signed certificate written to %s; clients trust it with\n  SSL_CERT_FILE=%s tofu init\n(or add it to the system trust store). For trials only.\n", out, out)
	default:
		if certFile == "" || keyFile == "" {
			return nil, fmt.Errorf("--tls-cert and --tls-key go together")
		}
		r, err := loadServerCert(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		watch(r)
		return servercreds.ReloadingServerConfig(r), nil
	}
	return servercreds.ServerConfig(cert), nil
}

// loadServerCert reads the server's certificate and key (regular files
// of bounded size) into a Reloader; a file that cannot be read is named
// by its flag.
func loadServerCert(certFile, keyFile string) (*servercreds.Reloader, error) {
	r, err := servercreds.NewReloader(certFile, keyFile)
	var fe *servercreds.FileError
	if errors.As(err, &fe) {
		flag := map[string]string{servercreds.CertificateFile: "--tls-cert", servercreds.KeyFile: "--tls-key"}[fe.Role]
		return nil, fmt.Errorf("%s: %w", flag, fe.Err)
	}
	return r, err
}

// openAuditLog opens --audit-log (nil without it).
func openAuditLog(c *cli.Context, logger *slog.Logger) (*audit.Log, error) {
	path := c.String("audit-log")
	if path == "" {
		if c.Bool("audit-documents") {
			return nil, usageError(c, "--audit-documents goes with --audit-log")
		}
		return nil, nil
	}
	return audit.Open(audit.Options{Path: path, MaxBytes: c.Int64("audit-max-size"), MaxFiles: c.Int("audit-max-files"), Log: logger,
		Stdout: c.App.Writer, CloseTimeout: c.Duration("shutdown-timeout")})
}
