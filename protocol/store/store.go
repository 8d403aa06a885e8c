// Package store is the proxy's one view of the OCI registry: it maps
// provider and module addresses to repositories, lists and resolves tags
// as OpenTofu's oci_mirror does, reads provider indexes, platform
// manifests, provenance, module packages and OpenTofu releases with
// OpenTofu's checks, caches all of it (tags briefly and revalidated in the
// background, everything addressed by digest until evicted), classifies
// upstream failures, and fans work out over versions within bounds. The
// proxy's handlers for providers, modules and the TofuDL mirror are thin
// layers on top of it.
package store

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
)

// Options configure a Store.
type Options struct {
	// Client reaches registries (credentials, TLS trust, etiquette).
	Client *oci.Client
	// TagTTL is how long a repository's tag list is fresh (default 30s):
	// a version pushed meanwhile appears within it.
	TagTTL time.Duration
	// ResolveTTL is how long what a version tag names is fresh (default
	// 5m): versions are expected to be immutable, and a re-tagged version
	// (push --replace) is seen within it.
	ResolveTTL time.Duration
	// MaxStale is how long past its TTL a tag list or resolution is still
	// served while one background read revalidates it (default 5m).
	MaxStale time.Duration
	// FailureTTL is how long an upstream failure is remembered (default 5s).
	FailureTTL time.Duration
	// Timeout bounds each upstream read (default 30s).
	Timeout time.Duration
	// CacheBytes bounds the memory all the store's caches hold together
	// (default 192 MiB), shared out by cacheShares; costs are estimated
	// from what entries hold, bookkeeping included. CacheEntries bounds
	// the entries of each cache besides (default 65536).
	CacheEntries int
	CacheBytes   int64
	// Concurrency bounds the reads one request fans out at once (default
	// DefaultConcurrency).
	Concurrency int
	// DeniedAsMissing lists registry hosts (or "*") that report a missing
	// repository as 401/403 (GHCR): such answers then mean "not found".
	DeniedAsMissing []string
	// Admit, when set, is the admission rule: a root it refuses is not
	// served (Repo.Admitted). The proxy sets it from its
	// RequireAttestation.
	Admit Admit
	// HeldIndex, when it names a registry repository, is the
	// held-address index Held reads beside the catalog of that registry
	// (docs/catalogue.md, "What is held"): the repositories it names are
	// held even where the catalog does not list. RepairHeldIndex writes
	// into it, with Client's credentials, the repositories a catalog
	// listing finds that it lacks.
	HeldIndex       oci.Reference
	RepairHeldIndex bool
	// Observe is told each cache lookup's result (metrics).
	Observe func(cache, result string)
	Logger  *slog.Logger
}

// Store reads OpenTofu artifacts from registries and OCI layouts.
type Store struct {
	opts Options

	repos *cache.Cache[*opened]
	tags  *cache.Cache[*tagList]
	byTag *cache.Cache[taggedManifest]
	// tagged are the digests this store has read tags naming, for
	// TaggedTTL (taggedAt).
	tagged *cache.Cache[struct{}]
	// lastTagged is the digest each tag named when this store last read
	// it, for ResolveTTL, whether or not what it names could be read: a
	// version index's entry naming another digest is not taken for that
	// version (EntryAgrees).
	lastTagged *cache.Cache[digest.Digest]
	providers  *cache.Cache[*oci.ProviderVersion]
	zips       *cache.Cache[ocispec.Descriptor]
	provenance *cache.Cache[*Provenance]
	modules    *cache.Cache[ocispec.Descriptor]
	tofu       *cache.Cache[*StoredTofu]
	verdicts   *cache.Cache[rootVerdict]
	// dated are times read of roots: the ingest times a policy's min_age
	// counts from (dated.go).
	dated *cache.Cache[time.Time]
	// described are values read of subjects: what a platform's SBOM
	// says of its vulnerabilities (dated.go).
	described *cache.Cache[any]
	// summaries are small values read of subjects that every search
	// reads: a module's root interface (dated.go).
	summaries *cache.Cache[any]
	// held are the repositories templates map, listed (held.go).
	held *cache.Cache[Held]
	// indexReads are the version index reads under way aside of cold
	// resolutions, by repository: one each (readVersionIndexAside).
	indexReads sync.Map // string → <-chan struct{}
	// readAside are the version indexes read aside of cold resolutions
	// within ResolveTTL, by their tag's key: one the resolve cache no
	// longer holds was evicted early (larger than its share), and is
	// not read aside again until then (readVersionIndexAside).
	readAside *cache.Cache[struct{}]
}

// New makes a Store.
func New(opts Options) *Store {
	opts = opts.WithDefaults()
	ttl := func(name string, ttl, stale time.Duration) cache.Options {
		return cache.Options{Name: name, TTL: ttl, MaxStale: max(stale, 0), FailureTTL: opts.FailureTTL,
			MaxEntries: opts.CacheEntries, EntryCost: EntryCost, Timeout: opts.Timeout, Observe: opts.Observe}
	}
	shares := cacheShares
	if opts.Admit != nil {
		shares = admitShares
	}
	share := func(o cache.Options) cache.Options {
		o.MaxCost = max(opts.CacheBytes*shares[o.Name]/100, 1)
		return o
	}
	byDigest := func(name string) cache.Options { return share(ttl(name, 0, 0)) }
	return &Store{
		opts:       opts,
		repos:      cache.New[*opened](ttl("repositories", opts.TagTTL, opts.MaxStale)),
		tags:       cache.New[*tagList](share(ttl("tags", opts.TagTTL, 0))), // listings are revalidated at the document level
		byTag:      cache.New[taggedManifest](share(ttl("resolve", opts.ResolveTTL, opts.MaxStale))),
		tagged:     cache.New[struct{}](share(ttl("tagged_digests", TaggedTTL, 0))),
		lastTagged: cache.New[digest.Digest](share(ttl("last_tagged", opts.ResolveTTL, opts.MaxStale))),
		providers:  cache.New[*oci.ProviderVersion](byDigest("indexes")),
		zips:       cache.New[ocispec.Descriptor](byDigest("platform_manifests")),
		provenance: cache.New[*Provenance](byDigest("provenance")),
		modules:    cache.New[ocispec.Descriptor](byDigest("module_manifests")),
		tofu:       cache.New[*StoredTofu](byDigest("tofu_releases")),
		verdicts:   cache.New[rootVerdict](share(ttl("admissions", opts.ResolveTTL, opts.MaxStale))), // its name in metrics
		dated:      cache.New[time.Time](share(ttl("ingest_times", opts.ResolveTTL, opts.MaxStale))),
		described:  cache.New[any](share(ttl("sboms", opts.ResolveTTL, opts.MaxStale))),
		summaries:  cache.New[any](share(ttl("module_interfaces", opts.ResolveTTL, opts.MaxStale))),
		held:       cache.New[Held](share(ttl("held", opts.TagTTL, opts.MaxStale))),
		readAside:  cache.New[struct{}](ttl("indexes_read_aside", opts.ResolveTTL, 0)),
	}
}

// DefaultConcurrency is the default bound on the reads one request fans
// out at once, and serve's --registry-concurrency default (the bound on
// requests in flight to one registry). A cold listing reads one index per
// version, so its sequential round trips are about versions/Concurrency
// plus the tag list's pages: 2,000 versions are 8 rounds at 256 (0.3 s at
// 40 ms), 32 at 64 (1.3 s). docs/guide-registries.md ("Listings of many versions")
// says what it costs a registry.
const DefaultConcurrency = 256

// EntryCost is what one cache entry costs besides its value (the entry,
// its list element and map slot; the key is counted apart), in bytes.
const EntryCost = 320

// CacheCost is about the bytes the store's caches hold (what their costs
// add up to; the repositories cache, bounded by entries only, aside).
func (s *Store) CacheCost() int64 {
	return s.tags.Cost() + s.byTag.Cost() + s.providers.Cost() + s.zips.Cost() + s.provenance.Cost() + s.modules.Cost() + s.tofu.Cost() + s.verdicts.Cost() + s.dated.Cost() + s.described.Cost() + s.held.Cost()
}

// stringsCost is about the memory a slice of strings takes.
func stringsCost(list []string) int64 {
	n := int64(24)
	for _, s := range list {
		n += 16 + int64((len(s)+7)&^7)
	}
	return n
}

// cacheShares share Options.CacheBytes out among the caches, in percent:
// what a listing of many versions needs (what each version tag names,
// parsed) gets the most. Ingest times (read only for a policy's min_age)
// and verdicts (Checked: a policy's signers, a few dozen bytes each) take
// 1 each; SBOMs' vulnerabilities (read only for a policy's
// vulnerabilities block), 2; the repositories templates map (Held: a
// catalogue's few listings, about 400 bytes a repository), 2; what
// catalogue searches read of each module (source.ModuleDocs.SearchModule,
// 1 to 2 KiB a module), 4: about 5,000 modules in serve's default 256 MiB.
var cacheShares = map[string]int64{
	"held": 2, "module_interfaces": 4, "resolve": 38, "sboms": 2, "tagged_digests": 1, "last_tagged": 1, "ingest_times": 1, "admissions": 1, "indexes": 15, "provenance": 12, "platform_manifests": 8,
	"tags": 5, "module_manifests": 5, "tofu_releases": 5,
}

// admitShares are cacheShares with an admission rule: its verdicts
// (a few dozen bytes each, one per version), beside a policy's signers',
// take 2 more of resolve's.
var admitShares = map[string]int64{
	"held": 2, "module_interfaces": 4, "resolve": 36, "sboms": 2, "tagged_digests": 1, "last_tagged": 1, "ingest_times": 1, "indexes": 15, "provenance": 12, "platform_manifests": 8,
	"tags": 5, "module_manifests": 5, "tofu_releases": 5, "admissions": 3,
}

// disabledOr reads a duration option: 0 is the default, negative turns the
// behaviour off (off is what the cache understands as off).
func disabledOr(d, def, off time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return off
	}
	return d
}

// WithDefaults is o with every unset option at its default: 0 means the
// default, and a negative MaxStale or FailureTTL turns that behaviour off
// (and stays negative, so applying WithDefaults again changes nothing).
func (o Options) WithDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.TagTTL, 30*time.Second)
	def(&o.ResolveTTL, 5*time.Minute)
	def(&o.Timeout, 30*time.Second)
	o.MaxStale = disabledOr(o.MaxStale, 5*time.Minute, -1)
	o.FailureTTL = disabledOr(o.FailureTTL, 5*time.Second, -1)
	if o.CacheEntries <= 0 {
		o.CacheEntries = 65536
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = 192 << 20
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Repo is one repository as the store reads it. Making one costs
// nothing; the repository is opened on first use.
type Repo struct {
	s                  *Store
	ref                oci.Reference
	name               string
	deniedMeansMissing bool
}

// Repo returns the repository ref names (which must carry no tag).
func (s *Store) Repo(ref oci.Reference) *Repo {
	ref.Reference = ""
	return &Repo{s: s, ref: ref, name: ref.Name(), deniedMeansMissing: s.deniesMissing(ref)}
}

func (s *Store) deniesMissing(ref oci.Reference) bool {
	if ref.Layout {
		return false
	}
	for _, h := range s.opts.DeniedAsMissing {
		if h == "*" || h == ref.Registry {
			return true
		}
	}
	return false
}

// Name is the repository's name, for logs and messages.
func (r *Repo) Name() string { return r.name }

// Reference is the repository's reference.
func (r *Repo) Reference() oci.Reference { return r.ref }

func (r *Repo) open(ctx context.Context) (oci.ReadOnlyRepository, error) {
	o, err := r.opened(ctx)
	if err != nil {
		return nil, err
	}
	return o.repo, nil
}

// opened is an open repository, and, with an admission rule, the
// probe of its referrers API (probed is closed when it is done).
type opened struct {
	repo   oci.ReadOnlyRepository
	probed chan struct{}
}

// opened opens the repository once (cached); with an admission rule it
// starts attach.ProbeReferrers beside the first reads, so the admission's
// referrers read, a round trip later, goes straight where they are.
func (r *Repo) opened(ctx context.Context) (*opened, error) {
	res, err := r.s.repos.Get(ctx, r.name, func(ctx context.Context) (*opened, int64, error) {
		repo, err := r.s.opts.Client.OpenReadOnly(ctx, r.ref)
		if err != nil {
			return nil, 0, err
		}
		o := &opened{repo: repo, probed: make(chan struct{})}
		if r.s.opts.Admit == nil {
			close(o.probed)
			return o, 0, nil
		}
		go func() {
			defer close(o.probed)
			pctx, cancel := context.WithTimeout(context.Background(), r.s.opts.Timeout)
			defer cancel()
			_ = cache.Recover(func() error { attach.ProbeReferrers(pctx, repo); return nil })
		}()
		return o, 0, nil
	})
	if err != nil {
		return nil, r.fail(err, opening)
	}
	return res.Val, nil
}

// Fetch opens a blob for reading; the caller verifies what it reads
// (digest and size).
func (r *Repo) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	repo, err := r.open(ctx)
	if err != nil {
		return nil, err
	}
	rc, err := repo.Fetch(ctx, desc)
	if err != nil {
		return nil, r.fail(err, "fetching a blob")
	}
	return rc, nil
}

// FetchOrLocate opens a blob for reading, or returns the storage URL its
// registry redirects the download to (oci.FetchOrLocate): for handing
// clients the storage URL instead of streaming the blob.
func (r *Repo) FetchOrLocate(ctx context.Context, desc ocispec.Descriptor) (string, io.ReadCloser, error) {
	repo, err := r.open(ctx)
	if err != nil {
		return "", nil, err
	}
	loc, rc, err := oci.FetchOrLocate(ctx, repo, desc)
	if err != nil {
		return "", nil, r.fail(err, "fetching a blob")
	}
	return loc, rc, nil
}

// taggedManifest is what a tag named when it was read: the manifest's
// descriptor and what the reader made of its bytes (read once, so a
// parsed provider index need not keep the bytes it came from).
type taggedManifest struct {
	desc ocispec.Descriptor
	val  any
}

// manifestReader makes what the resolve cache keeps of a manifest read by
// tag, and says about how many bytes of memory that takes.
type manifestReader func(desc ocispec.Descriptor, body []byte) (val any, cost int64, err error)

// keepBody keeps a manifest's bytes as they are.
func keepBody(_ ocispec.Descriptor, body []byte) (any, int64, error) {
	return body, int64(len(body)), nil
}

// manifestByTag reads the manifest or index a tag names, in one round
// trip where the registry allows, and keeps what read makes of it for
// ResolveTTL. kind names the reader: one tag read by two kinds of reader
// is two entries. A manifest read refuses is a failure like any other,
// remembered for FailureTTL only: the answer may have been one bad
// answer of a registry that recovers, and a tag that named the wrong
// content may be fixed.
func (r *Repo) manifestByTag(ctx context.Context, kind, tag string, read manifestReader) (taggedManifest, error) {
	repo, err := r.open(ctx)
	if err != nil {
		return taggedManifest{}, err
	}
	res, err := r.s.byTag.Get(ctx, r.tagKey(kind, tag), func(ctx context.Context) (taggedManifest, int64, error) {
		desc, body, err := oci.FetchReference(ctx, repo, tag)
		if err != nil {
			return taggedManifest{}, 0, r.fail(err, "reading tag "+tag)
		}
		r.noteTagged(tag, desc.Digest)
		val, cost, err := read(desc, body)
		if err != nil {
			return taggedManifest{}, 0, r.fail(err, "reading the "+kind+" manifest tag "+tag+" names")
		}
		return taggedManifest{desc: desc, val: val}, cost + descriptorCost, nil
	})
	if err != nil {
		return taggedManifest{}, r.fail(err, "reading tag "+tag)
	}
	return res.Val, nil
}

// TaggedTTL is how long a digest a version's tag was seen naming stays
// servable under that version's archive URLs after the tag moves (push
// --replace): URLs handed out before keep working that long.
const TaggedTTL = 24 * time.Hour

// taggedAt checks that tag names, or named when this store read it within
// TaggedTTL (every tag read is noted, manifestByTag), the manifest with
// digest d; otherwise the tag is read afresh
// (the caches may predate a push or a pull-through). The version in an
// archive URL is thus not a mere label: the digest of a version the
// policy denies is not served under an allowed version's URL. Another
// digest is FailureNotFound.
func (r *Repo) taggedAt(ctx context.Context, repo oci.ReadOnlyRepository, kind, tag string, d digest.Digest) error {
	if _, ok := r.s.tagged.Peek(r.taggedKey(tag, d)); ok {
		return nil
	}
	desc, err := repo.Resolve(ctx, tag)
	if err != nil {
		return r.fail(err, "reading tag "+tag)
	}
	if desc.Digest != d {
		r.s.byTag.ForgetIf(r.tagKey(kind, tag), func(tm taggedManifest) bool { return tm.desc.Digest != desc.Digest })
		return &Error{Failure: oci.FailureNotFound, Repo: r.name, What: "reading tag " + tag,
			Err: fmt.Errorf("tag %s names %s, not %s", tag, desc.Digest, d)}
	}
	r.noteTagged(tag, d)
	return nil
}

// noteTagged remembers that tag named d (taggedAt), and names it now
// (LastTagged).
func (r *Repo) noteTagged(tag string, d digest.Digest) {
	r.s.tagged.Add(r.taggedKey(tag, d), struct{}{}, 0)
	r.s.lastTagged.Add(r.name+":"+tag, d, descriptorCost)
}

// lastTagged is the digest tag named when this store last read it
// (within ResolveTTL), if it did.
func (r *Repo) lastTagged(tag string) (digest.Digest, bool) {
	return r.s.lastTagged.Peek(r.name + ":" + tag)
}

func (r *Repo) taggedKey(tag string, d digest.Digest) string {
	return r.name + ":" + tag + "@" + d.String()
}

// tagKey is the resolve cache's key for a tag read by a kind of reader.
func (r *Repo) tagKey(kind, tag string) string { return r.name + ":" + tag + " " + kind }

// descriptorCost is about what a descriptor read from a registry takes in
// memory (its digest and media type strings, the struct).
const descriptorCost = 256

// EachVersion calls fn for every version, at most Concurrency at a time,
// and stops at the first error fn returns: the reads still outstanding
// are cancelled (no work goes on for nobody).
func (s *Store) EachVersion(ctx context.Context, vs names.VersionList, fn func(ctx context.Context, i int, v names.Version) error) error {
	return s.Each(ctx, len(vs), func(ctx context.Context, i int) error { return fn(ctx, i, vs[i]) })
}

// Each calls fn for 0…n-1, at most Concurrency at a time, stopping at the
// first error. Each call is a recovery boundary: a panic is its error
// (cache.PanicError), not the end of the process.
//
// Up to Concurrency goroutines take the indices in turn (not one
// goroutine per index: a warm catalogue search calls fn for thousands of
// modules, each in microseconds, and fresh goroutines' stacks cost more
// than that).
func (s *Store) Each(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	var next atomic.Int64
	for range min(n, max(s.opts.Concurrency, 1)) {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || gctx.Err() != nil {
					return nil
				}
				if err := cache.Recover(func() error { return fn(gctx, i) }); err != nil {
					return err
				}
			}
		})
	}
	return g.Wait()
}
