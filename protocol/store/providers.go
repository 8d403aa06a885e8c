package store

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
)

// A provider in the store: the repository its address maps to, and what
// is read there with OpenTofu's checks.

// RepositoryTemplate maps a provider's names ("hostname", "namespace",
// "type") to a repository: an *repotemplate.Template, or an oci_mirror block's HCL
// template (cliconfig.Template).
type RepositoryTemplate interface {
	Expand(values map[string]string) (oci.Reference, error)
	String() string
}

// ProviderMapping maps the provider addresses its filters cover to
// repositories, like an oci_mirror block of an OpenTofu CLI configuration.
type ProviderMapping struct {
	Template RepositoryTemplate
	// Include and Exclude are path.Match patterns on host/namespace/type;
	// an empty Include covers every address.
	Include, Exclude []string
	// Label says where the mapping was configured, for people
	// ("--provider-template", "tofu.rc:3:14").
	Label string
}

// ProviderMappings are mappings in order: an address maps through the
// first whose filters cover it.
type ProviderMappings []ProviderMapping

// CheckMappings validates mappings: every one needs a template, and every
// pattern must be a valid path.Match pattern. Patterns are lower-cased, as
// addresses are.
func CheckMappings(ms []ProviderMapping) (ProviderMappings, error) {
	out := make(ProviderMappings, len(ms))
	for i, m := range ms {
		if m.Template == nil || isNilTemplate(m.Template) {
			return nil, fmt.Errorf("provider mapping %d has no repository template", i+1)
		}
		out[i] = ProviderMapping{Template: m.Template, Include: lower(m.Include), Exclude: lower(m.Exclude), Label: m.Label}
		for _, p := range append(append([]string(nil), out[i].Include...), out[i].Exclude...) {
			if _, err := path.Match(p, "a/b/c"); err != nil {
				return nil, fmt.Errorf("invalid provider pattern %q: %w", p, err)
			}
		}
	}
	return out, nil
}

// isNilTemplate catches a nil *repotemplate.Template in the interface.
func isNilTemplate(t RepositoryTemplate) bool {
	ot, ok := t.(*repotemplate.Template)
	return ok && ot == nil
}

func lower(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.ToLower(s)
	}
	return out
}

// covers applies a mapping's include and exclude patterns.
func (m ProviderMapping) covers(p names.Provider) bool {
	addr := p.String()
	match := func(patterns []string) bool {
		for _, pat := range patterns {
			if ok, _ := path.Match(pat, addr); ok {
				return true
			}
		}
		return false
	}
	if len(m.Include) > 0 && !match(m.Include) {
		return false
	}
	return !match(m.Exclude)
}

// ErrNoRepository is a provider that a mapping covers but whose
// template gives no valid repository name for it (e.g. an oci_mirror
// template putting a host name with a port inside the repository path,
// which tofu refuses too).
var ErrNoRepository = errors.New("the mapping's template gives no valid repository name")

// Index is the position of the mapping p maps through, the first whose
// filters cover it (whether or not its template gives a repository for
// p); -1 when none does.
func (ms ProviderMappings) Index(p names.Provider) int {
	for i, m := range ms {
		if m.covers(p) {
			return i
		}
	}
	return -1
}

// Map returns the repository of the first mapping that covers p, or an
// error (NotFound) saying why there is none.
func (ms ProviderMappings) Map(p names.Provider) (oci.Reference, error) {
	if i := ms.Index(p); i >= 0 {
		ref, err := ms[i].Template.Expand(p.TemplateValues())
		if err != nil {
			return oci.Reference{}, &Error{Failure: oci.FailureNotFound, Repo: p.String(), What: "mapping the provider to a repository",
				Err: fmt.Errorf("%w: %v", ErrNoRepository, err)}
		}
		return ref, nil
	}
	return oci.Reference{}, &Error{Failure: oci.FailureNotFound, Repo: p.String(), What: "mapping the provider to a repository",
		Err: fmt.Errorf("provider %s is not served by this proxy (see its include and exclude filters)", p)}
}

// Provenance is an oci-tofu provenance manifest as read.
type Provenance struct {
	Meta  *oci.Provenance
	Files *oci.ProvenanceFiles
}

// ProviderVersion reads the index the tag of version v names, the tag
// OpenTofu resolves (names.TagForVersion), in one round trip where the
// registry allows. A listed version whose canonical tag does not exist
// ("1.2" for 1.2.0) is NotFound, as OpenTofu finds it.
func (r *Repo) ProviderVersion(ctx context.Context, v names.Version) (*oci.ProviderVersion, error) {
	tm, err := r.manifestByTag(ctx, "provider", names.TagForVersion(v), parseIndex)
	if err != nil {
		return nil, err
	}
	return withVersion(tm.val.(*oci.ProviderVersion), v), nil
}

// parseIndex reads a provider index as the resolve cache keeps it.
func parseIndex(desc ocispec.Descriptor, body []byte) (any, int64, error) {
	desc.Size = int64(len(body))
	pv, err := oci.ParseProviderIndex(desc, body)
	if err != nil {
		return nil, 0, err
	}
	return pv, indexCost(len(body)), nil
}

// indexCost is about the memory a parsed provider index takes: measured
// at 1.7 times its JSON's length (descriptors, the platform map, strings),
// counted as twice.
func indexCost(bodyLen int) int64 {
	return 2 * int64(bodyLen)
}

// ProviderVersionAt reads the index with digest d, the exact release an
// archive URL was handed out for, when version v's tag names it (taggedAt).
func (r *Repo) ProviderVersionAt(ctx context.Context, v names.Version, d digest.Digest) (*oci.ProviderVersion, error) {
	if tm, ok := r.s.byTag.Peek(r.tagKey("provider", names.TagForVersion(v))); ok && tm.desc.Digest == d {
		return withVersion(tm.val.(*oci.ProviderVersion), v), nil // the index the tag named when last read
	}
	repo, err := r.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.taggedAt(ctx, repo, "provider", names.TagForVersion(v), d); err != nil {
		return nil, err
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: d}
	pv, err := r.providerIndex(ctx, desc, func(ctx context.Context) ([]byte, error) {
		_, body, err := manifestAt(ctx, repo, d)
		return body, err
	})
	if err != nil {
		return nil, err
	}
	return withVersion(pv, v), nil
}

// providerIndex parses an index (cached by digest), reading its body with
// read when it is not cached.
func (r *Repo) providerIndex(ctx context.Context, desc ocispec.Descriptor, read func(context.Context) ([]byte, error)) (*oci.ProviderVersion, error) {
	res, err := r.s.providers.Get(ctx, r.name+"@"+desc.Digest.String(), func(ctx context.Context) (*oci.ProviderVersion, int64, error) {
		body, err := read(ctx)
		if err != nil {
			return nil, 0, err
		}
		pv, cost, err := parseIndex(desc, body)
		if err != nil {
			return nil, 0, err
		}
		return pv.(*oci.ProviderVersion), cost, nil
	})
	if err != nil {
		return nil, r.fail(err, "reading a provider index")
	}
	return res.Val, nil
}

// manifestAt reads the manifest or index with digest d, refusing an
// answer with another digest.
func manifestAt(ctx context.Context, repo oci.ReadOnlyRepository, d digest.Digest) (ocispec.Descriptor, []byte, error) {
	got, body, err := oci.FetchReference(ctx, repo, d.String())
	if err == nil && got.Digest != d {
		err = fmt.Errorf("%w: asked for %s, got %s", oci.ErrInvalidArtifact, d, got.Digest)
	}
	return got, body, err
}

// withVersion is a copy of a (shared, cached) index read for version v.
func withVersion(pv *oci.ProviderVersion, v names.Version) *oci.ProviderVersion {
	out := *pv
	out.Version = v
	return &out
}

// PlatformZip reads a platform manifest (cached by digest) for its zip
// layer, with OpenTofu's checks.
func (r *Repo) PlatformZip(ctx context.Context, m ocispec.Descriptor) (ocispec.Descriptor, error) {
	repo, err := r.open(ctx)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	res, err := r.s.zips.Get(ctx, r.name+"@"+m.Digest.String(), func(ctx context.Context) (ocispec.Descriptor, int64, error) {
		z, err := oci.ReadProviderPackage(ctx, repo, m)
		return z, 256, err
	})
	if err != nil {
		return ocispec.Descriptor{}, r.fail(err, "reading a platform manifest")
	}
	return res.Val, nil
}

// distrust forgets the resolution of pv's version tag to pv's index when
// content the index names could not be read as it must (missing, refused,
// corrupt): the index may have been one bad answer of the registry, and
// is read again after FailureTTL rather than kept for ResolveTTL. It
// returns err.
func (r *Repo) distrust(pv *oci.ProviderVersion, err error) error {
	switch FailureOf(err) {
	case oci.FailureNotFound, oci.FailureInvalid, oci.FailureCorrupt:
		r.s.byTag.ForgetIf(r.tagKey("provider", names.TagForVersion(pv.Version)), func(tm taggedManifest) bool {
			return tm.desc.Digest == pv.Index.Digest
		})
	}
	return err
}

// Zips reads every platform's zip layer, in parallel.
func (r *Repo) Zips(ctx context.Context, pv *oci.ProviderVersion) (map[names.Platform]ocispec.Descriptor, error) {
	out := make(map[names.Platform]ocispec.Descriptor, len(pv.Platforms))
	var mu sync.Mutex
	platforms := pv.SortedPlatforms()
	err := r.s.Each(ctx, len(platforms), func(ctx context.Context, i int) error {
		p := platforms[i]
		z, err := r.PlatformZip(ctx, pv.Platforms[p])
		if err != nil {
			return err
		}
		mu.Lock()
		out[p] = z
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, r.distrust(pv, err)
	}
	return out, nil
}

// Provenance reads a version's oci-tofu provenance (cached by digest), or
// returns nil when the artifact has none (made by third-party tools).
func (r *Repo) Provenance(ctx context.Context, pv *oci.ProviderVersion) (*Provenance, error) {
	if pv.Provenance == nil {
		return nil, nil
	}
	repo, err := r.open(ctx)
	if err != nil {
		return nil, err
	}
	d := *pv.Provenance
	res, err := r.s.provenance.Get(ctx, r.name+"@"+d.Digest.String(), func(ctx context.Context) (*Provenance, int64, error) {
		meta, files, err := oci.ReadProvenanceHinted(ctx, repo, d, r.provenanceHints(pv))
		if err != nil {
			return nil, 0, err
		}
		cost := int64(len(files.SHA256SUMS.Data) + len(files.Signature.Data) + len(files.Keys.Data) + len(files.ReleaseManifest.Data) + 1024)
		return &Provenance{Meta: meta, Files: files}, cost, nil
	})
	if err != nil {
		return nil, r.distrust(pv, r.fail(err, "reading a version's provenance"))
	}
	return res.Val, nil
}

// Summary says what a version offers: its plugin protocols and the keys
// that signed it. Indexes pushed by this oci-tofu carry it; for older ones
// the provenance is read. ok is false for artifacts without provenance.
func (r *Repo) Summary(ctx context.Context, pv *oci.ProviderVersion) (sum oci.ProvenanceSummary, ok bool, err error) {
	if pv.Summary != nil {
		return *pv.Summary, true, nil
	}
	prov, err := r.Provenance(ctx, pv)
	if err != nil || prov == nil {
		return sum, false, err
	}
	sum.Protocols = prov.Meta.Protocols
	if prov.Files.Signature.Data != nil && prov.Files.Keys.Data != nil {
		sum.SigningKeyIDs = prov.Meta.SigningKeyIDs
	}
	return sum, true, nil
}

// The repository's version index (oci/versionindex): a hint checked
// against the tag list for listings, and the source of a cold version
// read's provenance hints; never trusted for what is served of a version
// (that is read from the version's own index and its provenance, each
// verified).

// VersionIndex is the repository's version index, read by tag and cached
// as a tag's resolution (ResolveTTL; a missing or refused one for
// FailureTTL): nil when the repository has none, or one that cannot be
// read or used (logged once per read), so that a listing reads every
// version as without an index.
func (r *Repo) VersionIndex(ctx context.Context) *versionindex.Index {
	tm, err := r.manifestByTag(ctx, "versions", versionindex.Tag, parseVersionIndex)
	switch {
	case err == nil:
		return tm.val.(*versionindex.Index)
	case FailureOf(err) != oci.FailureNotFound && ctx.Err() == nil:
		r.s.opts.Logger.Warn("the version index is not used; versions are read from their tags", "repository", r.name, "error", err.Error())
	}
	return nil
}

// parseVersionIndex reads a version index as the resolve cache keeps it.
func parseVersionIndex(desc ocispec.Descriptor, body []byte) (any, int64, error) {
	if desc.MediaType != ocispec.MediaTypeImageIndex {
		return nil, 0, oci.Invalid("tag %s names a %s, not an image index", versionindex.Tag, desc.MediaType)
	}
	idx, err := versionindex.Parse(body)
	if err != nil {
		return nil, 0, err
	}
	return idx, idx.Cost(), nil
}

// EntryAgrees reports whether what this store knows cheaply of version
// e.Version's tag agrees with e: when the tag's resolution is cached, it
// names e's digest, and that index has e's platforms and summary; when
// the store read the tag but holds no index of it (it names something
// else, found broken), it named e's digest. (The tag list holding the
// tag is the caller's check.)
func (r *Repo) EntryAgrees(e versionindex.Entry) bool {
	tag := names.TagForVersion(e.Version)
	tm, ok := r.s.byTag.Peek(r.tagKey("provider", tag))
	if !ok {
		d, read := r.lastTagged(tag)
		return !read || d == e.Index.Digest
	}
	pv, isIndex := tm.val.(*oci.ProviderVersion)
	if !isIndex || tm.desc.Digest != e.Index.Digest {
		return false
	}
	pv = withVersion(pv, e.Version)
	got, ok := versionindex.EntryOf(pv)
	return ok && got.SameListing(e)
}

// ProviderVersionHinted is ProviderVersion that, when the tag's
// resolution is not cached (and r is no OCI layout), reads the
// repository's version index beside the tag: its entry's hints
// (provenanceHints) then let the version's provenance be read in one
// round trip instead of two. Both reads are one round trip, in parallel;
// the index's outcome changes nothing else, and its read holds up the
// answer at most as long again as the tag's, at least indexGrace
// (awaitIndex): an index that is slow or hangs costs the hints, not the
// time. The index read goes on without the caller, to fill the cache,
// bounded by the store's Timeout.
func (r *Repo) ProviderVersionHinted(ctx context.Context, v names.Version) (*oci.ProviderVersion, error) {
	if _, ok := r.s.byTag.Peek(r.tagKey("provider", names.TagForVersion(v))); ok || r.isLayout(ctx) {
		return r.ProviderVersion(ctx, v)
	}
	indexRead := r.readVersionIndexAside(ctx)
	start := time.Now()
	pv, err := r.ProviderVersion(ctx, v)
	awaitIndex(ctx, indexRead, time.Since(start))
	return pv, err
}

// indexGrace is the least time a cold resolution waits for the version
// index after its tag was read (awaitIndex): the index is larger than a
// version's own index and is parsed whole.
const indexGrace = 50 * time.Millisecond

// readVersionIndexAside starts reading the version index into the cache,
// detached from ctx's end (a caller that stops waiting would otherwise
// cancel the read it shares), and returns a channel closed when the read
// ends: at once when the index is cached, or when it was read within
// ResolveTTL and is no longer cached (evicted early, its cost beyond the
// resolve cache's share: reading it for each cold version of a listing
// would only evict the versions' tags, and be evicted by them).
// Concurrent cold resolutions of one repository share one such read (one
// goroutine, not one each).
func (r *Repo) readVersionIndexAside(ctx context.Context) <-chan struct{} {
	key := r.tagKey("versions", versionindex.Tag)
	if _, ok := r.s.byTag.Peek(key); ok {
		return closed
	}
	if _, ok := r.s.readAside.Peek(key); ok {
		return closed
	}
	done := make(chan struct{})
	if running, loaded := r.s.indexReads.LoadOrStore(key, (<-chan struct{})(done)); loaded {
		return running.(<-chan struct{})
	}
	detached := context.WithoutCancel(ctx)
	go func() {
		defer close(done)
		defer r.s.indexReads.Delete(key)
		_ = cache.Recover(func() error { r.readIndexToKeep(detached, key); return nil }) // its outcome is the cache's
	}()
	return done
}

// readIndexToKeep reads the version index into the cache, noting in
// readAside when it was read.
func (r *Repo) readIndexToKeep(ctx context.Context, key string) {
	if r.VersionIndex(ctx) != nil {
		r.s.readAside.Add(key, struct{}{}, 0)
	}
}

// closed is a closed channel: a read that has nothing to wait for.
var closed = func() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// awaitIndex waits for indexRead at most as long again as the tag's read
// took (tagRead), and at least indexGrace, or until ctx ends.
func awaitIndex(ctx context.Context, indexRead <-chan struct{}, tagRead time.Duration) {
	t := time.NewTimer(max(tagRead, indexGrace))
	defer t.Stop()
	select {
	case <-indexRead:
	case <-t.C:
	case <-ctx.Done():
	}
}

// isLayout reports whether r is an OCI layout, which holds no version
// index (push writes none there: docs/artifacts.md).
func (r *Repo) isLayout(ctx context.Context) bool {
	repo, err := r.open(ctx)
	return err == nil && oci.IsLayout(repo)
}

// provenanceHints are the blobs the cached version index says pv's
// provenance holds, when its entry is of pv's very index: nil when the
// index is not cached, lacks the version, or names another digest.
func (r *Repo) provenanceHints(pv *oci.ProviderVersion) []ocispec.Descriptor {
	tm, ok := r.s.byTag.Peek(r.tagKey("versions", versionindex.Tag))
	if !ok {
		return nil
	}
	idx, ok := tm.val.(*versionindex.Index)
	if !ok {
		return nil
	}
	e, ok := idx.Entries[pv.Version.String()]
	if !ok || e.Index.Digest != pv.Index.Digest {
		return nil
	}
	return e.ProvenanceBlobs
}
