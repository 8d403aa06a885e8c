package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// PullThrough configures pull-through: what the registry does not hold is
// fetched from allow-listed origins on first use, verified as `oci-tofu
// mirror` verifies it, stored in exactly the layout `mirror` writes, and
// served while it streams in; later requests are served from the registry,
// also while the origin is down. See docs/proxy.md, "Pull-through".
type PullThrough struct {
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
	// TofuDL mirror (which needs Options.TofuRepository).
	Tofu *ingest.TofuOrigin
	// EnforceGPGExpiration refuses provider releases signed by an expired
	// key, subkey or signature, as OpenTofu does with
	// OPENTOFU_ENFORCE_GPG_EXPIRATION=true (and `mirror
	// --enforce-gpg-expiration`); by default they are taken with a warning
	// in the log.
	EnforceGPGExpiration bool
	// Client reaches origins (default: system trust plus SSL_CERT_FILE,
	// TF_TOKEN_<host> credentials as OpenTofu reads them).
	Client *origin.Client
	// FailureTTL is how long an origin release that could not be fetched or
	// failed verification is remembered, and answered 502 without asking
	// the origin again (default 1m).
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
	// beyond it requests for further releases are answered 503.
	MaxPulls int
	// Timeout bounds the pull of one whole release (default 30m).
	Timeout time.Duration
	// TempDir holds releases being assembled (default os.TempDir()).
	TempDir string
	// MaxFileSize bounds each downloaded file (default oci.MaxPackageSize).
	MaxFileSize int64
}

// pullThrough is the running pull-through: origin metadata caches, the
// pulls in flight, what they recently stored and what recently failed.
type pullThrough struct {
	s       *Server
	opts    PullThrough
	client  *origin.Client
	log     *slog.Logger
	metrics *pullMetrics

	listings  *cache.Cache[originListing]
	releases  *cache.Cache[*ingest.ProviderRelease]
	tofuAPI   *cache.Cache[tofuListing]
	tofuRels  *cache.Cache[*ingest.TofuOriginRelease]
	completed *cache.Cache[pulled]
	recent    *recentlyStored
	// failures remembers releases that failed, for FailureTTL.
	failures *cache.Cache[error]

	mu       sync.Mutex
	inflight map[string]*pull
	running  sync.WaitGroup // pulls whose run has not returned
}

// setUpPullThrough validates the pull-through options and starts it.
func (s *Server) setUpPullThrough() error {
	o := s.opts.PullThrough
	if o == nil {
		return nil
	}
	if err := checkPullThrough(o, len(s.providers) > 0, s.opts.TofuRepository != nil); err != nil {
		return err
	}
	opts := pullDefaults(*o)
	pt := &pullThrough{s: s, opts: opts, client: opts.Client, log: s.log, metrics: newPullMetrics(s.metrics.reg),
		failures: cache.New[error](cache.Options{Name: "origin_failures", TTL: opts.FailureTTL, MaxEntries: s.opts.CacheEntries}), inflight: map[string]*pull{},
		recent: newRecentlyStored(recentTTL, s.opts.CacheEntries)}
	if pt.client == nil {
		pt.client = origin.NewClient(nil)
	}
	for host, base := range opts.Origins {
		if base != nil {
			if err := pt.client.SetProvidersBase(host, base); err != nil {
				return err
			}
		}
	}
	metaCache := func(name string, ttl time.Duration) cache.Options {
		return cache.Options{Name: name, TTL: ttl, MaxStale: ttl, FailureTTL: opts.FailureTTL, MaxEntries: s.opts.CacheEntries,
			MaxCost: budgetOf(s.opts).origins / 4, Timeout: opts.MetadataTimeout, Observe: s.metrics.observeCache}
	}
	pt.listings = cache.New[originListing](metaCache("origin_listings", opts.ListingTTL))
	pt.releases = cache.New[*ingest.ProviderRelease](withFailureTTL(metaCache("origin_releases", opts.ListingTTL), -1))
	pt.tofuAPI = cache.New[tofuListing](metaCache("origin_tofu_api", opts.ListingTTL))
	pt.tofuRels = cache.New[*ingest.TofuOriginRelease](withFailureTTL(metaCache("origin_tofu_releases", opts.ListingTTL), -1))
	pt.completed = cache.New[pulled](cache.Options{Name: "pulled", TTL: recentTTL, MaxEntries: s.opts.CacheEntries, Observe: s.metrics.observeCache})
	s.pull = pt
	if len(opts.Origins) > 0 && len(s.providers) > 0 {
		s.Mount("", PullPrefix, "pull", http.HandlerFunc(s.servePull))
	}
	return nil
}

func withFailureTTL(o cache.Options, d time.Duration) cache.Options {
	o.FailureTTL = d
	return o
}

// checkPullThrough refuses a configuration that cannot work.
func checkPullThrough(o *PullThrough, providers, tofu bool) error {
	if len(o.Origins) == 0 && o.Tofu == nil {
		return errors.New("pull-through: give at least one origin registry or a TofuDL origin")
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
	return nil
}

func pullDefaults(o PullThrough) PullThrough {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.FailureTTL, time.Minute)
	def(&o.ListingTTL, 5*time.Minute)
	def(&o.Timeout, 30*time.Minute)
	def(&o.MetadataTimeout, 10*time.Second)
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
	return o
}

// CheckPullThrough makes sure the registry lets the proxy push where
// pull-through stores releases: it starts (and cancels) an upload in a
// repository of each provider mapping and in the TofuDL repository. A
// read-only deployment is refused here, at start-up, rather than on the
// first install.
func (s *Server) CheckPullThrough(ctx context.Context) error {
	if s.pull == nil {
		return nil
	}
	var refs []oci.Reference
	if len(s.pull.opts.Origins) > 0 {
		host := s.pull.opts.RegistryOrigin
		for h := range s.pull.opts.Origins {
			if host == "" || h < host {
				host = h
			}
		}
		probe := names.Provider{Hostname: host, Namespace: "oci-tofu", Type: "pull-through-check"}
		for _, m := range s.providers {
			ref, err := m.Template.Expand(probe.TemplateValues())
			if err != nil {
				return err
			}
			refs = append(refs, ref)
		}
	}
	if s.pull.opts.Tofu != nil {
		refs = append(refs, *s.opts.TofuRepository)
	}
	for _, ref := range refs {
		if err := s.client.CheckPush(ctx, ref); err != nil {
			return fmt.Errorf("pull-through stores what it fetches, but the registry refuses the proxy's pushes to %s: %w\n"+
				"Give credentials allowed to push (--username with OCI_TOFU_PASSWORD or --password-stdin, or a docker config with them), "+
				"or run read-only, without pull-through", ref.Name(), err)
		}
	}
	return nil
}

// pullTarget is a provider as a request names it and where pull-through
// fetches it from.
type pullTarget struct {
	p      names.Provider // as served (the mirror path's address, or PROXY/NS/TYPE)
	origin names.Provider // at the origin registry
	via    string         // "m" (network mirror) or "r" (registry protocol), in pull URLs
}

// mirrorTarget is the pull-through target of a network mirror request: the
// provider's own hostname, if it is an allowed origin. A hostname not on
// the list is never contacted.
func (pt *pullThrough) mirrorTarget(p names.Provider) (pullTarget, bool) {
	if pt == nil {
		return pullTarget{}, false
	}
	if _, ok := pt.opts.Origins[p.Hostname]; !ok {
		return pullTarget{}, false
	}
	return pullTarget{p: p, origin: p, via: "m"}, true
}

// registryTarget is the pull-through target of a registry protocol
// request: the same namespace and type at RegistryOrigin.
func (pt *pullThrough) registryTarget(p names.Provider) (pullTarget, bool) {
	if pt == nil || pt.opts.RegistryOrigin == "" || len(pt.opts.Origins) == 0 {
		return pullTarget{}, false
	}
	o := p
	o.Hostname = pt.opts.RegistryOrigin
	return pullTarget{p: p, origin: o, via: "r"}, true
}

// target is the pull-through target a pull URL names, checked as when
// the metadata named it.
func (pt *pullThrough) target(r *http.Request, via string, p names.Provider) (pullTarget, error) {
	switch via {
	case "m":
		if t, ok := pt.mirrorTarget(p); ok {
			return t, nil
		}
	case "r":
		host, err := pt.s.registryHostname(r)
		if err != nil {
			return pullTarget{}, err
		}
		if t, ok := pt.registryTarget(p); ok && host == p.Hostname {
			return t, nil
		}
	}
	return pullTarget{}, notFound("provider %s is not pulled through from any allowed origin", p)
}

// start returns the pull in flight under key, or starts one with newPull,
// then asks it for the file a client wants (demand), if any.
func (pt *pullThrough) start(key string, newPull func() (*pull, error), demand string) (*pull, *growingFile, error) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	p, ok := pt.inflight[key]
	if !ok {
		if len(pt.inflight) >= pt.opts.MaxPulls {
			return nil, nil, &httpError{status: http.StatusServiceUnavailable, retryAfter: 5,
				msg: fmt.Sprintf("the proxy is already pulling %d releases from their origins; try again shortly", len(pt.inflight))}
		}
		if _, done := pt.completed.Peek(key); done {
			return nil, nil, errPullFinished
		}
		var err error
		if p, err = newPull(); err != nil {
			return nil, nil, err
		}
		pt.inflight[key] = p
		pt.metrics.inflight.Inc()
		pt.log.Info("pull-through: fetching a release from its origin", p.logAttrs()...)
		pt.running.Add(1)
		defer func() { // after the demanded file has started
			go func() {
				defer pt.running.Done()
				p.run()
			}()
		}()
	}
	if demand == "" {
		return p, nil, nil
	}
	g, err := p.fetch(demand)
	return p, g, err
}

// newPull prepares a pull's directory, holding the release's verified
// checksums (writeChecksums), and its context.
func (pt *pullThrough) newPull(kind, key, what string, repo oci.Repository, files []string, writeChecksums func(dir string) error) (*pull, error) {
	dir, err := os.MkdirTemp(pt.opts.TempDir, "oci-tofu-pull-")
	if err != nil {
		return nil, err
	}
	if err := writeChecksums(dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), pt.opts.Timeout)
	sorted := append([]string(nil), files...)
	sort.Strings(sorted)
	return &pull{pt: pt, kind: kind, key: key, what: what, dir: dir, repo: repo, files: sorted, ctx: ctx, cancel: cancel,
		started: map[string]*growingFile{}, settled: make(chan struct{})}, nil
}

// finished records a pull's outcome: what it stored, or its failure,
// remembered for FailureTTL.
func (pt *pullThrough) finished(p *pull, res pulled, err error, took time.Duration) {
	attrs := append(p.logAttrs(), slog.Duration("duration", took))
	if err == nil {
		pt.completed.Add(p.key, res, 1024)
		pt.metrics.result(p.kind, "stored")
		pt.log.Info("pull-through: release verified and stored", append(attrs, slog.String("digest", res.root.Digest.String()))...)
	} else {
		pt.failures.Add(p.failKey, err, 0)
		kind := originFailure(err)
		pt.metrics.result(p.kind, kind)
		pt.log.Warn("pull-through: release not stored", append(attrs, slog.String("failure", kind), slog.Any("error", err))...)
	}
	pt.mu.Lock()
	if pt.inflight[p.key] == p {
		delete(pt.inflight, p.key)
		pt.metrics.inflight.Dec()
	}
	pt.mu.Unlock()
}

// originFailure classifies an origin failure for logs and metrics:
// "tampered" (failed verification), "not_found", "unreachable" or "error".
func originFailure(err error) string {
	switch {
	case errors.Is(err, ingest.ErrVerification), errors.Is(err, errDigestMismatch):
		return "tampered"
	case errors.Is(err, origin.ErrNotFound):
		return "not_found"
	case origin.Unreachable(err):
		return "unreachable"
	}
	return "error"
}

// originError is what a client sees when the origin could not provide a
// release the registry does not hold.
func originError(host string, err error) error {
	var he *httpError
	if errors.As(err, &he) {
		return err
	}
	switch originFailure(err) {
	case "tampered":
		return statusErr(http.StatusBadGateway, err, "the release from origin %s failed verification (signature or digests) and was not stored", host)
	case "not_found":
		return statusErr(http.StatusNotFound, err, "not held by the registry, and origin %s does not offer it", host)
	case "unreachable":
		return statusErr(http.StatusBadGateway, err, "not held by the registry, and origin %s is unreachable", host)
	}
	return statusErr(http.StatusBadGateway, err, "not held by the registry, and origin %s answered with an error", host)
}

// remembered answers a request for a release that failed recently.
func (pt *pullThrough) remembered(kind, key, host string) error {
	err, ok := pt.failures.Peek(key)
	if !ok {
		return nil
	}
	pt.metrics.remembered.WithLabelValues(kind).Inc()
	he, _ := originError(host, err).(*httpError)
	if he == nil {
		return err
	}
	out := *he
	out.msg += fmt.Sprintf(" (remembered for %s; not retried before)", pt.opts.FailureTTL)
	if out.status >= 500 {
		out.retryAfter = int(pt.opts.FailureTTL.Seconds()) + 1
	}
	return &out
}

// notHeld reports whether err says the registry does not hold what was
// asked for (so pull-through may fetch it).
func notHeld(err error) bool {
	var he *httpError
	if errors.As(err, &he) {
		return he.status == http.StatusNotFound
	}
	return store.FailureOf(err) == oci.FailureNotFound
}

// recentTTL is how long what pull-through stored is remembered in memory:
// longer than the registry's tag lists and tag resolutions are cached (and
// a "not found" remembered), so listings and archive URLs never miss a
// release just stored.
const recentTTL = 15 * time.Minute

// recentlyStored remembers the versions pull-through stored lately, by
// repository, so listings include them before the registry's (cached) tag
// list does, also while the origin is down.
type recentlyStored struct {
	ttl time.Duration
	max int
	mu  sync.Mutex
	m   map[string]map[string]storedVersion // repository → version
	n   int
}

// storedVersion is a version pull-through stored: for the registry
// protocol, its listing entry; for the TofuDL mirror, its files.
type storedVersion struct {
	version  names.Version
	registry *wire.RegistryVersion
	files    []string
	until    time.Time
}

func newRecentlyStored(ttl time.Duration, max int) *recentlyStored {
	return &recentlyStored{ttl: ttl, max: max, m: map[string]map[string]storedVersion{}}
}

func (r *recentlyStored) add(repo string, sv storedVersion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.n >= r.max {
		r.pruneLocked(now)
	}
	if r.n >= r.max {
		return
	}
	if r.m[repo] == nil {
		r.m[repo] = map[string]storedVersion{}
	}
	if _, ok := r.m[repo][sv.version.String()]; !ok {
		r.n++
	}
	sv.until = now.Add(r.ttl)
	r.m[repo][sv.version.String()] = sv
}

func (r *recentlyStored) pruneLocked(now time.Time) {
	for repo, vs := range r.m {
		for k, sv := range vs {
			if now.After(sv.until) {
				delete(vs, k)
				r.n--
			}
		}
		if len(vs) == 0 {
			delete(r.m, repo)
		}
	}
}

// list returns the versions stored lately in repo.
func (r *recentlyStored) list(repo string) []storedVersion {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	var out []storedVersion
	for _, sv := range r.m[repo] {
		if now.Before(sv.until) {
			out = append(out, sv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version.LessThan(out[j].version) })
	return out
}

// close waits for the pulls in flight to store their releases until ctx
// ends, then cancels those still running and waits for them to clean up.
func (pt *pullThrough) close(ctx context.Context) error {
	done := make(chan struct{})
	go func() { pt.running.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	pt.mu.Lock()
	for _, p := range pt.inflight {
		p.cancel()
	}
	pt.mu.Unlock()
	<-done
	return fmt.Errorf("pulls still running were stopped: %w", ctx.Err())
}
