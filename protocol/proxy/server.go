package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/health"
	"github.com/oci-tofu/oci-tofu/protocol/oidc"
	"github.com/oci-tofu/oci-tofu/protocol/policyfile"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/logins"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/modules"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/page"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/providers"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/tofudl"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Paths the server answers on. The URLs it hands out are absolute when it
// knows the URL clients reach it by (Options.PublicURL, or TLS it
// terminates itself), and relative to the document that names them
// otherwise (respond/docs.go).
const (
	DiscoveryPath = wire.DiscoveryPath
	MirrorPrefix  = providers.MirrorPrefix
	ProvidersPath = providers.ProvidersPath
	ArchivePrefix = providers.ArchivePrefix
	PullPrefix    = providers.PullPrefix

	ModulesPath         = modules.ModulesPath
	ModuleArchivePrefix = modules.ModuleArchivePrefix
	ModuleOriginsPrefix = modules.ModuleOriginsPrefix

	TofuAPIPath        = tofudl.APIPath
	TofuDownloadPrefix = tofudl.DownloadPrefix
)

// Options configure a Server. A registry client (Client, or Registry to
// build one) is required, and at least one of ProviderMappings,
// ModuleMappings and TofuRepository.
type Options struct {
	// Client reaches registries. When nil, one is built from Registry,
	// with the proxy's metrics watching its etiquette.
	Client   *oci.Client
	Registry oci.Options
	// ProviderMappings map providers to repositories, in the syntax of
	// OpenTofu's oci_mirror repository_template, each with its own
	// filters, as the oci_mirror blocks of an OpenTofu CLI configuration: a
	// provider maps to the first whose filters cover it.
	ProviderMappings []store.ProviderMapping
	// ModuleMappings map hostname/namespace/name/system to repositories
	// of module packages, served as modules.v1, in order: a module's
	// versions are those of every mapping, each served from the first
	// mapping holding it (protocol/source/merged, docs/proxy.md "Several
	// mappings"); pull-through stores modules into the first.
	ModuleMappings []*repotemplate.Template
	// TofuRepository holds OpenTofu releases (oci-tofu push tofu), served
	// as a TofuDL mirror under /tofu/.
	TofuRepository *oci.Reference
	// RegistryHostname is the ${hostname} the Provider Registry Protocol
	// expands templates with. Empty: the host name the client used to reach
	// the proxy, without port.
	RegistryHostname string
	// PublicURL is the URL clients reach the proxy by,
	// https://host[:port][/prefix] (a path-prefixing reverse proxy in
	// front): the base of every URL the proxy hands out. Empty: https and
	// the request's Host when the proxy terminates TLS, relative URLs when
	// it serves plain HTTP behind a front.
	PublicURL string
	// Signer, when set, signs a SHA256SUMS generated from the OCI digests
	// for releases that carry no publisher signature, so the registry
	// protocol can offer them.
	Signer *pgp.Signer
	// AuthTokens, when non-empty, are the bearer tokens clients must send
	// (from credentials blocks) for metadata; archive URLs are then
	// HMAC-signed and expire after ArchiveURLTTL (default 1h).
	AuthTokens    []string
	URLSigningKey []byte
	ArchiveURLTTL time.Duration
	// Store configures the reads of registries: TagTTL, ResolveTTL,
	// MaxStale, FailureTTL, Timeout, CacheEntries and DeniedAsMissing, with
	// the store's defaults (its Client, CacheBytes, Observe and Logger are
	// the server's). Documents live as long as tag lists (TagTTL) and are
	// then served stale, for at most MaxStale, while being rebuilt;
	// failures are remembered for FailureTTL; Timeout bounds each metadata
	// read from the registry.
	Store store.Options
	// CacheBytes bounds the memory the caches hold together (default 256
	// MiB): a fifth for documents, a twentieth for generated signatures,
	// with pull-through a tenth for origin metadata, the rest for the
	// store's caches.
	CacheBytes int64
	// StallTimeout aborts an archive stream that makes no progress, either
	// from the registry or to the client, for this long (default 60s),
	// and an /mcp response the client has not taken this long after its
	// first byte.
	StallTimeout time.Duration
	// RedirectArchives hands clients the storage URL a registry redirects
	// an archive's download to (S3, GCS, Azure, a CDN) instead of
	// streaming the archive; archives of registries that serve blobs
	// themselves are streamed as always (protocol/proxy/deliver, docs/proxy.md
	// "Archive delivery").
	RedirectArchives bool
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
	// Version is shown on the page at "/".
	Version string
	// MCP, when set, serves the assistants' tools at /mcp (assistant.go).
	MCP *MCP
	// Hint, when set, says in one line what the operator can do about an
	// upstream failure; it is logged with the request (never sent to
	// clients).
	Hint func(error) string
	// PullThrough, when set, fetches what the registry does not hold from
	// allow-listed origins, verifies it, stores it and serves it.
	PullThrough *pullthrough.Options
	// RequireAttestation, when set, serves only releases whose root has
	// an attestation of its kind's predicate type (provider indexes:
	// release.ProviderPredicateType; module packages:
	// modulepkg.PredicateType; OpenTofu releases:
	// release.TofuPredicateType; cosign's tag schema) verifying with one
	// of these keys; the others do not exist for clients (the gate:
	// protocol/source/gate/policy.go).
	// OpenTofu releases served with TofuDL pull-through are not checked. With PullThrough, the pull-through
	// attester's key (PullThrough.Attest) must be one of them: otherwise
	// no release pulled through could be served (checkAttestedPulls).
	RequireAttestation []*attest.Verifier
	// RequireTrust, when set, also admits releases whose root satisfies
	// one of these trusts (attest.Checker: a notation trust policy, say);
	// with RequireAttestation, any one of the keys or trusts admits a
	// release. Without RequireAttestation, PullThrough is refused: what
	// it stores carries no such signatures (checkAttestedPulls).
	RequireTrust []attest.Checker
	// RequireKeyless, when set, admits too the releases whose root has a
	// keyless attestation (a Sigstore bundle stored as its referrer) of its
	// kind's predicate type that it verifies (attest.BundleChecker: cmd
	// supplies convert/keyless unless built with the nokeyless tag; the
	// proxy does not link sigstore-go). Its identities are trusted for
	// ingest times too (sources.go: ingestTrust).
	RequireKeyless attest.BundleChecker
	// Policy, when set, is the policy file (convert/policy):
	// provider, module and OpenTofu versions it denies do not exist for
	// clients (left out of listings, with a warning naming the rule where
	// the protocol has warnings; 404 with the reason when asked for),
	// provider platforms its rules leave out are not offered (the gate:
	// protocol/source/gate/policy.go).
	// With PullThrough, the origin's denied versions are left out too and
	// never pulled (pulled_policy.go). Rules with min_age or signers read
	// each release's signatures and attestations (gate/policy.go).
	Policy *policy.Live
	// VulnDB is the vulnerability database a policy rule's
	// vulnerabilities block matches each stored platform's SBOM against
	// (serve --vuln-db): required by such a rule, a start-up error
	// without it.
	VulnDB *vulns.Live
	// PolicyStatus, when set, reports the reloads of the policy file
	// Policy comes from (protocol/policyfile), for the page and the
	// metrics.
	PolicyStatus func() policyfile.Status
	// Now is the clock policy decisions (min_age) are made by (default
	// time.Now): a version is served once it is old enough by it.
	Now func() time.Time
	// ReadyInterval is how long /readyz reuses its last check of the
	// registries (default health.DefaultInterval).
	ReadyInterval time.Duration
	// RegistryDecides makes each client's bearer token its credential for
	// the registry (USERNAME:PASSWORD, as docker login takes it): before
	// anything is served to it for an address, the registry is asked
	// whether it may read the address's repository, the answer kept per
	// credential and repository for RegistryConfirmTTL (default 1m; a
	// refusal a tenth of that). The proxy reads and pull-through writes
	// with the proxy's own credential (registry_decides.go).
	RegistryDecides    bool
	RegistryConfirmTTL time.Duration
	// RegistryLogins bound the logins RegistryDecides makes with clients'
	// credentials (protocol/proxy/logins; zero values: the defaults).
	RegistryLogins logins.Limits
	// Audit, when set, gets an event for every artifact delivered and
	// every request refused, and with AuditDocuments for every document
	// (protocol/audit). The caller closes it after the server.
	Audit          *audit.Log
	AuditDocuments bool
	// Shared, when set, is the state the replicas of a fleet share
	// (sharedstate.Redis): pull-through's leases, stored releases and
	// failures, and (a sharedstate.Board) the page's records of what each
	// replica served (protocol/proxy/page). Nil: this process alone. Its metrics
	// are served when it is a prometheus.Collector.
	Shared sharedstate.Store
	// Notifications, when set, receive registries' notifications of
	// pushes and deletes at notify.Path (docs/notifications.md).
	Notifications *Notifications
	// EventsFile, when set, is the webhook subscriptions file
	// (docs/events.md): the policy's denials and warnings and what
	// pull-through stores are sent as events to the endpoints it names.
	// It is read at New (an error fails New) and followed until Close:
	// an edit is applied, a bad one logged and the last good
	// subscriptions kept (events.go).
	EventsFile string
}

// Server serves the discovery document and the handler sets mounted on
// it: providers, modules and the TofuDL mirror (each a handler type of its
// own, reading through one responder), the page, health and metrics.
type Server struct {
	opts      Options
	log       *slog.Logger
	metrics   *respond.Metrics
	page      *page.Page // for people; the record of what was served
	out       *respond.Responder
	store     *store.Store
	mappings  store.ProviderMappings
	tokens    [][32]byte
	providers *providers.Handlers // nil without providers
	catalog   *catalog.Handlers   // nil without a catalogue (catalog_show.go)
	// counts are the fleet's download counts this replica adds to
	// (audit.go); nil without a shared cache that keeps them.
	counts *audit.Counts
	// clientAuth: clients authenticate (auth.go); budgets are their
	// request budgets (auth.go).
	clientAuth bool
	budgets    *budgets
	identities identities          // verifies the JWTs of clients' oidc blocks
	confirmed  confirmations       // the registry's word on who reads what (registry_decides.go)
	logins     *logins.Guard       // the bounds of the logins it takes
	client     *oci.Client         // reaches the registry (pull-through writes with it)
	pull       *pullthrough.Engine // nil without pull-through
	probes     *health.Probes      // /readyz and /livez (probes.go)
	// notifications receive registries' notifications (notifications.go);
	// nil without.
	notifications *notifications
	events        *serverEvents // nil without an events file (events.go)

	mux *http.ServeMux
	// prefixes are the handlers Mount added, longest prefix first, as
	// ServeHTTP routes GET and HEAD requests to them before the mux
	// (copied on write).
	prefixes atomic.Pointer[[]mounted]
	mu       sync.RWMutex
	services map[string]string
}

// New builds a Server.
func New(opts Options) (*Server, error) {
	opts, mappings, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, log: opts.Logger, metrics: respond.NewMetrics(), mappings: mappings, mux: http.NewServeMux(), services: map[string]string{}}
	s.metrics.WatchPolicy(opts.PolicyStatus)
	if db := opts.VulnDB; db != nil {
		s.metrics.WatchVulnerable(func() string {
			if cur := db.Current(); cur != nil {
				return cur.Fingerprint()
			}
			return ""
		})
		s.metrics.WatchVulnDB(db.Status)
	}
	s.budgets = newBudgets(s.metrics.Registry())
	s.identities.opts = oidc.Options{Logger: s.log, Now: opts.Now}
	s.confirmed = confirmations{ttl: opts.RegistryConfirmTTL, m: map[confirmKey]confirmed{}}
	s.logins = logins.New(opts.RegistryLogins)
	if err := s.connect(); err != nil {
		return nil, err
	}
	urls, err := s.setUpClientAuth()
	if err != nil {
		return nil, err
	}
	if err := s.checkMCP(); err != nil {
		return nil, err
	}
	if err := s.setUpEvents(); err != nil {
		return nil, err
	}
	if err := s.startShared(); err != nil {
		s.events.close(context.Background())
		return nil, err
	}
	if err := s.setUpNotifications(); err != nil {
		s.events.close(context.Background())
		return nil, err
	}
	s.page = s.newPage()
	s.startAudit()
	s.out = s.newResponder(urls)
	s.startNotifications()
	s.probes = s.newProbes()
	s.routeCommon()
	s.routeProbes()
	s.routeWhoami()
	s.routePage(len(mappings) > 0)
	if len(mappings) > 0 {
		s.mountProviders(mappings)
	}
	if len(opts.ModuleMappings) > 0 {
		s.mountModules(opts.ModuleMappings)
		s.mountModuleOrigins(opts.ModuleMappings)
	}
	if len(opts.ModuleMappings) > 0 || len(mappings) > 0 || opts.TofuRepository != nil {
		s.mountCatalog(opts.ModuleMappings)
	}
	if opts.TofuRepository != nil {
		s.mountTofu(*opts.TofuRepository)
	}
	s.routeMCP()
	s.startReloadEvents()
	return s, nil
}

// checkOptions validates options and fills in defaults.
func checkOptions(opts Options) (Options, store.ProviderMappings, error) {
	if len(opts.ProviderMappings) == 0 && len(opts.ModuleMappings) == 0 && opts.TofuRepository == nil {
		return opts, nil, errors.New("proxy.New: configure at least one of ProviderMappings, ModuleMappings and TofuRepository")
	}
	if slices.Contains(opts.ModuleMappings, nil) {
		return opts, nil, errors.New("proxy.New: a ModuleMappings entry is nil")
	}
	if opts.TofuRepository != nil && opts.TofuRepository.Reference != "" {
		return opts, nil, errors.New("proxy.New: TofuRepository must name a repository without a tag or digest")
	}
	if err := checkAttestedPulls(opts); err != nil {
		return opts, nil, err
	}
	if opts.Policy.Current().HasVulnerabilities() && opts.VulnDB == nil {
		return opts, nil, errors.New("proxy.New: the policy has a vulnerabilities block, and no vulnerability database is given (serve --vuln-db DIR)")
	}
	mappings, err := store.CheckMappings(opts.ProviderMappings)
	if err != nil {
		return opts, nil, err
	}
	if err := checkCredentialHosts(opts); err != nil {
		return opts, nil, err
	}
	if opts.PublicURL != "" {
		if opts.PublicURL, err = respond.ParsePublicURL(opts.PublicURL); err != nil {
			return opts, nil, err
		}
	}
	if opts.RegistryHostname != "" {
		if opts.RegistryHostname, err = respond.ParseHostname(opts.RegistryHostname); err != nil {
			return opts, nil, fmt.Errorf("registry hostname: %w", err)
		}
	}
	return withDefaults(opts), mappings, nil
}

// checkCredentialHosts refuses one credential for every registry
// (serve --username) beside a template whose registry host is a
// placeholder: the host would be the one a client names (a provider's
// hostname in a mirror request, a module_id's host in a tool call), and
// the proxy's password would go to it.
func checkCredentialHosts(opts Options) error {
	if opts.Client == nil || !opts.Client.OneCredential() {
		return nil
	}
	var templates []string
	for _, m := range opts.ProviderMappings {
		templates = append(templates, m.Template.String())
	}
	for _, t := range opts.ModuleMappings {
		templates = append(templates, t.String())
	}
	for _, t := range templates {
		if host, _, _ := strings.Cut(t, "/"); strings.Contains(host, "${") {
			return fmt.Errorf("template %q: its registry host is a placeholder, so a client chooses the registry, and --username/--password send one credential to every registry: give the registries' credentials in a docker config instead (each goes to its own host only)", t)
		}
	}
	return nil
}

// withDefaults fills in what is left unset; the store's defaults are
// the store's.
func withDefaults(opts Options) Options {
	opts.Store = opts.Store.WithDefaults()
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = 60 * time.Second
	}
	if opts.ArchiveURLTTL <= 0 {
		opts.ArchiveURLTTL = time.Hour
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 256 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.RegistryConfirmTTL <= 0 {
		opts.RegistryConfirmTTL = time.Minute
	}
	return opts
}

// connect builds the registry client (unless given) and the store, which
// reads the client's held-address index (checkHeldIndex).
func (s *Server) connect() error {
	client := s.opts.Client
	if client == nil {
		ro := s.opts.Registry
		e := oci.Etiquette{}
		if ro.Etiquette != nil {
			e = *ro.Etiquette
		}
		e.OnEvent = s.metrics.EtiquetteEvent
		ro.Etiquette = &e
		if ro.Logger == nil {
			ro.Logger = s.log
		}
		var err error
		if client, err = oci.NewClient(ro); err != nil {
			return err
		}
	}
	if err := s.checkHeldIndex(client); err != nil {
		return err
	}
	s.client = client
	so := s.opts.Store
	so.Client, so.CacheBytes, so.Observe, so.Logger = client, budgetOf(s.opts).store, s.metrics.ObserveCache, s.log
	if idx, ok := client.HeldIndex(); ok { // heldindex.go
		so.HeldIndex, so.RepairHeldIndex = idx, true
	}
	if s.opts.admitting() {
		so.Admit = admission(s.opts.RequireAttestation, s.opts.RequireTrust, s.opts.RequireKeyless)
	}
	s.store = store.New(so)
	return nil
}

// routeCommon adds the health, metrics and discovery endpoints.
func (s *Server) routeCommon() {
	s.mux.Handle("/healthz", s.instrument("healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !respond.AllowRead(w, r) {
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})))
	metricsHandler := s.metrics.Handler()
	s.mux.Handle("/metrics", s.instrument("metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if respond.AllowRead(w, r) {
			metricsHandler.ServeHTTP(w, r)
		}
	})))
	s.mux.Handle(DiscoveryPath, s.instrument("discovery", http.HandlerFunc(s.serveDiscovery)))
}

// Logger is the server's logger, for mounted handlers.
func (s *Server) Logger() *slog.Logger { return s.log }

// Client is the registry client the server reads (and pull-through
// writes) with, for work beside the server that should share its
// credentials, connections and etiquette (start-up checks).
func (s *Server) Client() *oci.Client { return s.client }

// Close ends the server's background work once it serves no more
// requests: releases being pulled through are given until ctx ends to be
// stored, then cancelled (their temporary files removed). Serve calls it
// after the HTTP server has shut down. The page's shared record is no
// longer published (it expires in Redis by itself).
func (s *Server) Close(ctx context.Context) error {
	if s.counts != nil {
		s.counts.Close(ctx)
	}
	s.page.Close()
	if s.notifications != nil {
		s.notifications.stop()
	}
	err := s.pull.Close(ctx)
	s.events.close(ctx) // after pull-through, whose last stores are events
	return err
}

func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	if !respond.AllowRead(w, r) {
		return
	}
	s.mu.RLock()
	doc := make(wire.Discovery, len(s.services))
	for k, v := range s.services {
		doc[k] = s.opts.PublicURL + v // absolute with a public URL, which may carry a path prefix
	}
	s.mu.RUnlock()
	respond.WriteJSON(w, r, doc)
}

// newResponder is what the handlers answer with (respond): the options
// they need of the server's, its logs, metrics and store, the page as
// the observer of what was served, and the URL signer when clients
// authenticate.
func (s *Server) newResponder(urls *respond.URLSigner) *respond.Responder {
	o := s.opts
	out := respond.New(respond.Options{RegistryHostname: o.RegistryHostname, PublicURL: o.PublicURL,
		TagTTL: o.Store.TagTTL, MaxStale: o.Store.MaxStale, FailureTTL: o.Store.FailureTTL, ArchiveURLTTL: o.ArchiveURLTTL,
		StallTimeout: o.StallTimeout, RedirectArchives: o.RedirectArchives, Hint: o.Hint, Policy: o.Policy, VulnDB: o.VulnDB, Now: o.Now, Notified: s.notifiedCounter()},
		s.log, s.metrics, cache.Options{Name: "documents", TTL: o.Store.TagTTL, MaxStale: max(o.Store.MaxStale, 0),
			FailureTTL: o.Store.FailureTTL, MaxEntries: o.Store.CacheEntries, MaxCost: budgetOf(o).docs, EntryCost: store.EntryCost,
			Timeout: 2 * o.Store.Timeout, Observe: s.metrics.ObserveCache}, urls)
	out.Observer, out.Store = s.page.Observer(), s.store
	if urls != nil {
		out.Bearer, out.Tickets = s.bearer, ticketBudgets{s}
	}
	if e := s.events; e != nil {
		out.Refused = func(d *source.Denied, who audit.Caller) { e.refused(o.Policy.Generation(), d, who) }
	}
	return out
}

// cacheBudget shares Options.CacheBytes out among the caches.
type cacheBudget struct{ docs, generated, origins, store int64 }

// budgetOf gives a fifth to documents, a twentieth to generated
// signatures, with pull-through a tenth to what is read from origins (a
// quarter of it per origin cache), and the rest to what is read from
// registries.
func budgetOf(o Options) cacheBudget {
	b := cacheBudget{docs: o.CacheBytes / 5, generated: o.CacheBytes / 20}
	if o.PullThrough != nil {
		b.origins = o.CacheBytes / 10
	}
	b.store = o.CacheBytes - b.docs - b.generated - b.origins
	return b
}

// ObserveCertificateReload counts a change of the TLS certificate files:
// err is nil when the new pair is served, the reason it was refused
// otherwise (servercreds.Reloader's OnReload).
func (s *Server) ObserveCertificateReload(err error) { s.metrics.ObserveCertificateReload(err) }

// ObserveCertificateExpiry serves when the TLS certificate served
// expires (respond.Metrics.ObserveCertificateExpiry). Called once, by
// serve.
func (s *Server) ObserveCertificateExpiry(notAfter func() time.Time) error {
	return s.metrics.ObserveCertificateExpiry(notAfter)
}

// cacheCost is what the server's caches hold, by their counts: what
// Options.CacheBytes bounds (pull-through's origin caches aside).
func (s *Server) cacheCost() int64 {
	n := s.store.CacheCost() + s.out.Docs.Cost()
	if s.providers != nil {
		n += s.providers.CacheCost()
	}
	return n
}
