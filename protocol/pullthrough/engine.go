package pullthrough

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Config is what the engine uses besides its Options: where releases are
// stored (the provider mappings and the TofuDL repository, through the
// registry client), where its metrics go, and how much its caches hold.
type Config struct {
	Options
	// Mappings map provider addresses to the repositories pulled providers
	// are stored in.
	Mappings store.ProviderMappings
	// TofuRepository stores pulled OpenTofu releases.
	TofuRepository *oci.Reference
	// ModuleTemplate maps module addresses to the repositories pulled
	// modules are stored in: the first of the proxy's module mappings,
	// the only one pull-through stores into (the proxy names the
	// repository of each pull; the engine probes one at CheckPush).
	ModuleTemplate *repotemplate.Template
	// Registry writes to the registry.
	Registry *oci.Client
	// Metrics registers pull-through's metrics (nil: not registered).
	Metrics prometheus.Registerer
	// ObserveCache is told each cache lookup's result.
	ObserveCache func(cache, result string)
	// CacheEntries bounds the entries of each cache (default 65536);
	// CacheBytes the memory of the origin metadata caches together
	// (default 16 MiB).
	CacheEntries int
	CacheBytes   int64
	Logger       *slog.Logger
	// Shared is the state replicas share (nil: sharedstate.NewLocal, this
	// process alone).
	Shared sharedstate.Store
	// OwnHostname is the proxy's own host name as the operator gave it
	// (--registry-hostname, else --public-url's host): an address on it
	// is the proxy's, never an origin's by name, though an origin bears
	// it too (pushed.go). Pull-through under the proxy's own name (the
	// registry protocol's providers, own modules) stores under it alone,
	// and not at all without it: a request's Host is the client's to
	// choose (OwnHost).
	OwnHostname string
	// Events, when set, is told each provider release and module version
	// stored (events.VersionIngested, via pull-through), from
	// EventSource (the proxy's public URL). Nil: no events.
	Events      events.Emitter
	EventSource string
}

// Engine is the running pull-through: origin metadata caches, the pulls
// in flight, what they recently stored and what recently failed.
type Engine struct {
	opts     Options
	mappings store.ProviderMappings
	tofuRepo *oci.Reference
	modTpl   *repotemplate.Template
	ownHost  string
	registry *oci.Client
	log      *slog.Logger
	metrics  *metrics
	shared   sharedstate.Store
	events   events.Emitter // nil: none
	source   string         // the events' source

	listings  *cache.Cache[Listing]
	releases  *cache.Cache[*ingest.ProviderOriginRelease]
	tofuAPI   *cache.Cache[TofuListing]
	tofuRels  *cache.Cache[*ingest.TofuOriginRelease]
	completed *cache.Cache[Stored]
	// sharedDone and distrusted hold other replicas' records of what they
	// stored (shared.go), and those the registry did not confirm.
	sharedDone *cache.Cache[Stored]
	distrusted *cache.Cache[bool]
	recent     *recentlyStored
	// failures remembers releases that failed, for FailureTTL.
	failures *cache.Cache[error]

	moduleListings *cache.Cache[map[string]string]

	mu       sync.Mutex
	inflight map[string]*Pull
	running  sync.WaitGroup // pulls whose run has not returned, and their checks
	checking int            // checks after a pull running (keys.go), under mu
}

// recentTTL is how long what pull-through stored is remembered in memory:
// longer than the registry's tag lists and tag resolutions are cached (and
// a "not found" remembered), so listings and archive URLs never miss a
// release just stored.
const recentTTL = 15 * time.Minute

// New checks the configuration and starts the engine.
func New(c Config) (*Engine, error) {
	if err := c.Options.Check(len(c.Mappings) > 0, c.TofuRepository != nil, c.ModuleTemplate != nil); err != nil {
		return nil, err
	}
	if c.Registry == nil {
		return nil, fmt.Errorf("pull-through: a registry client is required")
	}
	if c.CacheEntries <= 0 {
		c.CacheEntries = 65536
	}
	if c.CacheBytes <= 0 {
		c.CacheBytes = 16 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Shared == nil {
		c.Shared = sharedstate.NewLocal()
	}
	opts := c.Options.withDefaults()
	allowed, err := opts.allowedHosts()
	if err != nil {
		return nil, err
	}
	opts.Client.Restrict(allowed)
	for host, base := range opts.Origins {
		if base != nil {
			if err := opts.Client.SetProvidersBase(host, base); err != nil {
				return nil, err
			}
		}
	}
	e := &Engine{opts: opts, shared: c.Shared, mappings: c.Mappings, tofuRepo: c.TofuRepository, modTpl: c.ModuleTemplate, ownHost: c.OwnHostname, registry: c.Registry, log: c.Logger, events: c.Events, source: c.EventSource,
		metrics: newMetrics(c.Metrics), inflight: map[string]*Pull{}, recent: newRecentlyStored(recentTTL, c.CacheEntries),
		failures: cache.New[error](cache.Options{Name: "origin_failures", TTL: opts.FailureTTL, MaxEntries: c.CacheEntries})}
	metaCache := func(name string, failureTTL time.Duration) cache.Options {
		return cache.Options{Name: name, TTL: opts.ListingTTL, MaxStale: opts.ListingTTL, FailureTTL: failureTTL, MaxEntries: c.CacheEntries,
			MaxCost: c.CacheBytes / 4, Timeout: opts.MetadataTimeout, Observe: c.ObserveCache}
	}
	// Releases are not remembered as failures by the cache: the engine
	// remembers the failures that count (failures), and only those.
	e.listings = cache.New[Listing](metaCache("origin_listings", opts.FailureTTL))
	e.releases = cache.New[*ingest.ProviderOriginRelease](metaCache("origin_releases", -1))
	e.tofuAPI = cache.New[TofuListing](metaCache("origin_tofu_api", opts.FailureTTL))
	e.tofuRels = cache.New[*ingest.TofuOriginRelease](metaCache("origin_tofu_releases", -1))
	e.moduleListings = cache.New[map[string]string](metaCache("origin_module_listings", opts.FailureTTL))
	e.completed = cache.New[Stored](cache.Options{Name: "pulled", TTL: recentTTL, MaxEntries: c.CacheEntries, Observe: c.ObserveCache})
	e.sharedDone = cache.New[Stored](cache.Options{Name: "pulled_shared", TTL: recentTTL, MaxEntries: c.CacheEntries})
	e.distrusted = cache.New[bool](cache.Options{Name: "pulled_distrusted", TTL: recentTTL, MaxEntries: c.CacheEntries})
	return e, nil
}

// Providers reports whether providers are pulled through.
func (e *Engine) Providers() bool { return e != nil && len(e.opts.Origins) > 0 }

// Tofu reports whether OpenTofu releases are pulled through.
func (e *Engine) Tofu() bool { return e != nil && e.opts.Tofu != nil }

// FailureTTL is how long failed origin releases are remembered.
func (e *Engine) FailureTTL() time.Duration { return e.opts.FailureTTL }

// InFlight is the number of releases being pulled right now, and of
// the checks after a pull still running (keys.go).
func (e *Engine) InFlight() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.inflight) + e.checking
}

// CheckPush makes sure the registry lets the proxy push where
// pull-through stores releases: it starts (and cancels) an upload in a
// repository of each provider mapping, of the module template and in the
// TofuDL repository. A
// read-only deployment is refused at start-up rather than on the first
// install.
func (e *Engine) CheckPush(ctx context.Context) error {
	var refs []oci.Reference
	if len(e.opts.Origins) > 0 {
		host := e.opts.RegistryOrigin
		for h := range e.opts.Origins {
			if host == "" || h < host {
				host = h
			}
		}
		probe := names.Provider{Hostname: host, Namespace: "oci-tofu", Type: "pull-through-check"}
		for _, m := range e.mappings {
			ref, err := m.Template.Expand(probe.TemplateValues())
			if err != nil {
				return err
			}
			refs = append(refs, ref)
		}
	}
	if e.opts.Tofu != nil {
		refs = append(refs, *e.tofuRepo)
	}
	if len(e.opts.Modules) > 0 {
		ref, err := e.modTpl.Expand(names.Module{Namespace: "oci-tofu", Name: "pull-through-check", System: "check"}.TemplateValues("pull-through-check"))
		if err != nil {
			return err
		}
		refs = append(refs, ref)
	}
	for _, ref := range refs {
		if err := e.registry.CheckPush(ctx, ref); err != nil {
			return fmt.Errorf("pull-through stores what it fetches, but the registry refuses the proxy's pushes to %s: %w: %w",
				ref.Name(), ErrPushRefused, err)
		}
	}
	return nil
}

// start returns the pull in flight under key, or starts one with newPull
// (once this replica holds the release's lease when replicas share
// state: claim, shared.go), then asks it for the file a client wants
// (demand), if any: a new pull only once guard lets it store into dst.
// Without wait, a release another replica pulls is errElsewhere.
func (e *Engine) start(ctx context.Context, kind names.Kind, key, failKey, host string, dst *Destination, newPull func() (*Pull, error), demand string, wait bool) (*Pull, *File, error) {
	if e.inflightPull(key) == nil {
		if err := e.guard(ctx, dst); err != nil {
			return nil, nil, err
		}
	}
	var lease sharedstate.Lease
	if e.shared.Shared() && e.inflightPull(key) == nil {
		if _, done := e.completed.Peek(key); done {
			return nil, nil, ErrFinished
		}
		var err error
		if lease, err = e.claim(ctx, key, failKey, host, wait); err != nil {
			return nil, nil, err
		}
	}
	p, g, created, err := e.startLocal(key, failKey, newPull, demand, lease)
	if errors.Is(err, errFailedMeanwhile) {
		if err = e.remembered(ctx, kind, failKey, host); err == nil { // forgotten since: start
			p, g, created, err = e.startLocal(key, failKey, newPull, demand, lease)
		}
	}
	if !created && lease != nil {
		lease.Release()
	}
	return p, g, err
}

// errFailedMeanwhile is startLocal's answer when the release failed
// between the caller's look at the failure memory and its start: a pull
// that ended in failure just before must not be started again at once.
var errFailedMeanwhile = errors.New("pull-through: the release failed meanwhile")

// startLocal returns the pull in flight here under key, or starts one
// with newPull holding lease (created), and the demanded file.
func (e *Engine) startLocal(key, failKey string, newPull func() (*Pull, error), demand string, lease sharedstate.Lease) (p *Pull, g *File, created bool, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.inflight[key]
	if !ok {
		if p, err = e.newInflight(key, failKey, newPull, lease); err != nil {
			return nil, nil, false, err
		}
		created = true
		e.running.Add(1)
		defer func() { // after the demanded file has started
			go func() {
				defer e.running.Done()
				p.run()
			}()
		}()
	}
	if demand != "" {
		g, err = p.fetch(demand)
	}
	return p, g, created, err
}

// newInflight checks the engine's bounds and records a new pull (e.mu
// held): not when the release is stored or failed since the caller
// looked (finished records both before it lets go of the pull).
func (e *Engine) newInflight(key, failKey string, newPull func() (*Pull, error), lease sharedstate.Lease) (*Pull, error) {
	if len(e.inflight) >= e.opts.MaxPulls {
		return nil, &Error{Failure: FailureBusy, RetryAfter: 5,
			Msg: fmt.Sprintf("the proxy is already pulling %d releases from their origins; try again shortly", len(e.inflight))}
	}
	if _, done := e.completed.Peek(key); done {
		return nil, ErrFinished
	}
	if _, failed := e.failures.Peek(failKey); failed {
		return nil, errFailedMeanwhile
	}
	p, err := newPull()
	if err != nil {
		return nil, err
	}
	p.lease = lease
	e.inflight[key] = p
	e.metrics.inflight.Inc()
	e.log.Info("pull-through: fetching a release from its origin", p.logAttrs()...)
	return p, nil
}

// newPull prepares a pull's directory, holding the release's verified
// checksums (writeChecksums), and its context.
func (e *Engine) newPull(kind names.Kind, key, what string, repo oci.Repository, files []string, writeChecksums func(dir string) error) (*Pull, error) {
	dir, err := os.MkdirTemp(e.opts.TempDir, "oci-tofu-pull-")
	if err != nil {
		return nil, err
	}
	if err := writeChecksums(dir); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.Timeout)
	sorted := append([]string(nil), files...)
	sort.Strings(sorted)
	return &Pull{e: e, kind: kind, key: key, what: what, dir: dir, repo: repo, files: sorted, ctx: ctx, cancel: cancel,
		started: map[string]*File{}, settled: make(chan struct{}), done: make(chan struct{})}, nil
}

// finished records a pull's outcome: what it stored, or its failure,
// remembered for FailureTTL unless the proxy was only busy.
func (e *Engine) finished(p *Pull, res Stored, err error, took time.Duration) {
	attrs := append(p.logAttrs(), slog.Duration("duration", took))
	if err == nil {
		e.completed.Add(p.key, res, 1024)
		e.shareStored(p.key, res)
		e.metrics.result(p.kind, "stored")
		e.log.Info(outcomeMessage(p.kind, true), append(attrs, slog.String("digest", res.Root.Digest.String()))...)
		e.emitIngested(p, res)
		e.checkOriginKeys(p)
	} else {
		kind := Classify(err)
		if kind != FailureBusy && kind != FailurePushed {
			e.rememberFailure(p.failKey, err)
		}
		e.metrics.result(p.kind, kind)
		e.log.Warn(outcomeMessage(p.kind, false), append(attrs, slog.String("failure", kind), slog.Any("error", err))...)
	}
	if p.lease != nil {
		p.lease.Release() // after the record: waiting replicas find it
	}
	e.mu.Lock()
	if e.inflight[p.key] == p {
		delete(e.inflight, p.key)
		e.metrics.inflight.Dec()
	}
	e.mu.Unlock()
}

// emitIngested sends the event of a version p stored (res), when the
// engine has an emitter and p says what it stores (a provider release or
// a module version).
func (e *Engine) emitIngested(p *Pull, res Stored) {
	if e.events == nil || p.ingested == nil {
		return
	}
	ev := *p.ingested
	ev.Digest = res.Root.Digest.String()
	e.events.Emit(context.Background(), events.New(e.source, ev))
}

// outcomeMessage is the log message of a pull's outcome.
func outcomeMessage(kind names.Kind, stored bool) string {
	switch {
	case kind == names.KindModule && stored:
		return "pull-through: module fetched, packed and stored"
	case kind == names.KindModule:
		return "pull-through: module not stored"
	case stored:
		return "pull-through: release verified and stored"
	}
	return "pull-through: release not stored"
}

// InflightFile returns a file of the pull in flight under key (starting
// its download if needed; name "" asks for none), or nil when no pull
// runs under key.
func (e *Engine) InflightFile(key, name string) (*Pull, *File, error) {
	e.mu.Lock()
	p := e.inflight[key]
	e.mu.Unlock()
	if p == nil {
		return nil, nil, nil
	}
	if name == "" {
		return p, nil, nil
	}
	g, err := p.fetch(name)
	if errors.Is(err, ErrFinished) {
		return nil, nil, nil
	}
	return p, g, err
}

// remembered is the error of a release that failed recently, or nil.
func (e *Engine) remembered(ctx context.Context, kind names.Kind, key, host string) error {
	err, ok := e.failures.Peek(key)
	if !ok {
		if err, ok = e.sharedFailure(ctx, key, host); !ok {
			return nil
		}
	}
	e.metrics.remembered.WithLabelValues(string(kind)).Inc()
	pe, _ := originError(host, err).(*Error)
	if pe == nil {
		return err
	}
	out := *pe
	out.Msg += fmt.Sprintf(" (remembered for %s; not retried before)", e.opts.FailureTTL)
	if out.Failure != FailureNotFound {
		out.RetryAfter = int(e.opts.FailureTTL.Seconds()) + 1
	}
	return &out
}

// reportOriginError logs and counts a failed read of origin metadata.
func (e *Engine) reportOriginError(kind names.Kind, what string, err error) {
	failure := Classify(err)
	e.metrics.originErrors.WithLabelValues(string(kind), failure).Inc()
	if failure == FailureNotFound || errors.Is(err, context.Canceled) {
		return
	}
	e.log.Warn("pull-through: origin failed", slog.String("kind", string(kind)), slog.String("what", what), slog.String("failure", failure), slog.Any("error", err))
}

// DegradedListing logs and counts a listing answered without the origin.
func (e *Engine) DegradedListing(kind names.Kind, what string, err error) {
	if Classify(err) == FailureNotFound {
		return
	}
	e.metrics.degraded.WithLabelValues(string(kind)).Inc()
	e.log.Warn("pull-through: listing only what the registry holds, the origin failed", slog.String("kind", string(kind)), slog.String("what", what), slog.Any("error", err))
}

// Close waits for the pulls in flight to store their releases until ctx
// ends, then cancels those still running and waits for them to clean up.
func (e *Engine) Close(ctx context.Context) error {
	if e == nil {
		return nil
	}
	done := make(chan struct{})
	go func() { e.running.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	e.mu.Lock()
	for _, p := range e.inflight {
		p.cancel()
	}
	e.mu.Unlock()
	<-done
	return fmt.Errorf("pulls still running were stopped: %w", ctx.Err())
}
