package protocol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// maxVersions bounds how many version tags one repository may list.
const maxVersions = 10000

// source reads provider releases from OCI repositories, with caches.
type source struct {
	client   *oci.Client
	mappings []providerMapping
	timeout  time.Duration
	log      *slog.Logger
	metrics  *metrics
	signer   *pgp.Signer

	repos    *cache[oci.ReadOnlyRepository] // by repository name, TTL
	tags     *cache[versions.List]          // by repository name, TTL
	resolved *cache[ocispec.Descriptor]     // by repository name + tag, TTL
	indexes  *cache[*oci.ProviderVersion]   // by repository name + digest
	zips     *cache[ocispec.Descriptor]     // by repository name + platform manifest digest
	provs    *cache[*provenance]            // by repository name + provenance digest
	sums     *cache[*checksums]             // by repository name + index digest + version

	docsOnce sync.Once
	docs     *cache[doc] // encoded metadata documents, by request path (see serveDoc)
}

// provenance is an oci-tofu provenance manifest as read.
type provenance struct {
	meta  *oci.Provenance
	files *oci.ProvenanceFiles
}

// release is one provider version as found in its repository.
type release struct {
	Provider Provider
	Version  versions.Version
	repo     oci.ReadOnlyRepository
	repoName string
	pv       *oci.ProviderVersion
	prov     *provenance // nil when the artifact has none (third-party tools)
}

// ProviderMapping maps the provider addresses its filters admit to
// repositories, like an oci_mirror block of an OpenTofu CLI configuration.
type ProviderMapping struct {
	Template         *oci.Template
	Include, Exclude []string // path.Match patterns on host/namespace/type
}

type providerMapping struct {
	template         *oci.Template
	include, exclude []string // lower-cased
}

// admits applies a mapping's include and exclude patterns.
func (m providerMapping) admits(p Provider) bool {
	addr := p.String()
	match := func(patterns []string) bool {
		for _, pat := range patterns {
			if ok, _ := path.Match(pat, addr); ok {
				return true
			}
		}
		return false
	}
	if len(m.include) > 0 && !match(m.include) {
		return false
	}
	return !match(m.exclude)
}

// mapping returns the first mapping that admits p.
func (s *source) mapping(p Provider) (providerMapping, bool) {
	for _, m := range s.mappings {
		if m.admits(p) {
			return m, true
		}
	}
	return providerMapping{}, false
}

// repository opens the repository a provider maps to. Opened repositories
// are kept for the tag TTL (an OCI layout is re-read after that, so new
// tags appear).
func (s *source) repository(ctx context.Context, p Provider) (oci.ReadOnlyRepository, string, error) {
	m, ok := s.mapping(p)
	if !ok {
		return nil, "", notFound("provider %s is not served by this proxy (see its --include/--exclude or configuration)", p)
	}
	ref, err := m.template.Expand(p.TemplateValues())
	if err != nil {
		return nil, "", notFound("provider %s has no repository here: %v", p, err)
	}
	name := ref.Name()
	repo, err := s.repos.do(ctx, name, s.timeout, func(ctx context.Context) (oci.ReadOnlyRepository, error) {
		return s.client.OpenReadOnly(ctx, ref)
	})
	if err != nil {
		if oci.IsNotFound(err) {
			return nil, "", notFound("unknown provider %s", p)
		}
		return nil, "", s.upstream(err, "opening the provider's repository")
	}
	return repo, name, nil
}

func (s *source) upstream(err error, what string) error {
	var he *httpError
	if errors.As(err, &he) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	s.metrics.upstreamError(upstreamKind(err))
	return upstreamError(err, what)
}

// listVersions lists a repository's canonical version tags through the tag
// cache, refusing repositories with more than maxVersions of them.
func listVersions(ctx context.Context, tags *cache[versions.List], timeout time.Duration, repo oci.ReadOnlyRepository, name string) (versions.List, error) {
	return tags.do(ctx, name, timeout, func(ctx context.Context) (versions.List, error) {
		list, err := oci.ListVersions(ctx, repo)
		if err == nil && len(list) > maxVersions {
			return nil, fmt.Errorf("%w: repository %s has more than %d version tags", oci.ErrInvalidArtifact, name, maxVersions)
		}
		return list, err
	})
}

// versions lists a provider's canonical version tags.
func (s *source) versions(ctx context.Context, p Provider) (versions.List, error) {
	repo, name, err := s.repository(ctx, p)
	if err != nil {
		return nil, err
	}
	list, err := listVersions(ctx, s.tags, s.timeout, repo, name)
	if err != nil {
		if oci.IsNotFound(err) {
			return nil, notFound("unknown provider %s", p)
		}
		return nil, s.upstream(err, "listing the provider's versions")
	}
	if len(list) == 0 {
		return nil, notFound("provider %s has no versions", p)
	}
	return list, nil
}

// release resolves a version tag and reads the release it names.
func (s *source) release(ctx context.Context, p Provider, v versions.Version) (*release, error) {
	repo, name, err := s.repository(ctx, p)
	if err != nil {
		return nil, err
	}
	tag := names.TagForVersion(v)
	desc, err := s.resolved.do(ctx, name+":"+tag, s.timeout, func(ctx context.Context) (ocispec.Descriptor, error) {
		return repo.Resolve(ctx, tag)
	})
	if err != nil {
		if oci.IsNotFound(err) {
			return nil, notFound("provider %s has no version %s", p, v)
		}
		return nil, s.upstream(err, "resolving the version's tag")
	}
	return s.readRelease(ctx, p, v, repo, name, desc)
}

// releaseAt reads the release with a given index digest, as archive URLs
// name it: the exact content the client's metadata described.
func (s *source) releaseAt(ctx context.Context, p Provider, v versions.Version, index digest.Digest) (*release, error) {
	repo, name, err := s.repository(ctx, p)
	if err != nil {
		return nil, err
	}
	if pv, ok := s.indexes.get(name + "@" + index.String()); ok {
		return s.finishRelease(ctx, p, v, repo, name, pv)
	}
	desc, err := s.resolved.do(ctx, name+"@"+index.String(), s.timeout, func(ctx context.Context) (ocispec.Descriptor, error) {
		return repo.Resolve(ctx, index.String())
	})
	if err != nil {
		if oci.IsNotFound(err) {
			return nil, notFound("provider %s has no release with index %s", p, index)
		}
		return nil, s.upstream(err, "resolving the release's index")
	}
	if desc.Digest != index {
		return nil, s.upstream(fmt.Errorf("%w: asked for %s, got %s", oci.ErrInvalidArtifact, index, desc.Digest), "resolving the release's index")
	}
	return s.readRelease(ctx, p, v, repo, name, desc)
}

func (s *source) readRelease(ctx context.Context, p Provider, v versions.Version, repo oci.ReadOnlyRepository, name string, desc ocispec.Descriptor) (*release, error) {
	pv, err := s.indexes.do(ctx, name+"@"+desc.Digest.String(), s.timeout, func(ctx context.Context) (*oci.ProviderVersion, error) {
		return oci.ReadProviderIndex(ctx, repo, desc)
	})
	if err != nil {
		return nil, s.upstream(err, "reading the version's index")
	}
	return s.finishRelease(ctx, p, v, repo, name, pv)
}

func (s *source) finishRelease(ctx context.Context, p Provider, v versions.Version, repo oci.ReadOnlyRepository, name string, pv *oci.ProviderVersion) (*release, error) {
	rel := &release{Provider: p, Version: v, repo: repo, repoName: name, pv: pv}
	if pv.Provenance != nil {
		d := *pv.Provenance
		prov, err := s.provs.do(ctx, name+"@"+d.Digest.String(), s.timeout, func(ctx context.Context) (*provenance, error) {
			meta, files, err := oci.ReadProvenance(ctx, repo, d)
			if err != nil {
				return nil, err
			}
			return &provenance{meta: meta, files: files}, nil
		})
		if err != nil {
			return nil, s.upstream(err, "reading the version's provenance")
		}
		rel.prov = prov
	}
	return rel, nil
}

// platforms lists a release's platforms, sorted.
func (r *release) platforms() []names.Platform {
	out := make([]names.Platform, 0, len(r.pv.Platforms))
	for p := range r.pv.Platforms {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// protocols are the plugin protocol versions of a release; "5.0" when
// unknown (see docs/proxy.md).
func (r *release) protocols() []string {
	if r.prov != nil && len(r.prov.meta.Protocols) > 0 {
		return r.prov.meta.Protocols
	}
	return []string{"5.0"}
}

// zip reads one platform's zip layer descriptor.
func (s *source) zip(ctx context.Context, r *release, p names.Platform) (ocispec.Descriptor, error) {
	m, ok := r.pv.Platforms[p]
	if !ok {
		return ocispec.Descriptor{}, notFound("provider %s %s has no package for %s", r.Provider, r.Version, p)
	}
	z, err := s.zips.do(ctx, r.repoName+"@"+m.Digest.String(), s.timeout, func(ctx context.Context) (ocispec.Descriptor, error) {
		return oci.ReadProviderPackage(ctx, r.repo, m)
	})
	if err != nil {
		return ocispec.Descriptor{}, s.upstream(err, "reading the platform's manifest")
	}
	return z, nil
}

// allZips reads every platform's zip layer, in parallel.
func (s *source) allZips(ctx context.Context, r *release) (map[names.Platform]ocispec.Descriptor, error) {
	var mu sync.Mutex
	out := map[names.Platform]ocispec.Descriptor{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, p := range r.platforms() {
		g.Go(func() error {
			z, err := s.zip(gctx, r, p)
			if err != nil {
				return err
			}
			mu.Lock()
			out[p] = z
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// h1 returns the stored h1 hash of a platform's package, when provenance
// holds one whose SHA256SUMS entry ties it to this very zip.
func (r *release) h1(p names.Platform, zip ocispec.Descriptor) string {
	if r.prov == nil || r.prov.files.SHA256SUMS.Data == nil {
		return ""
	}
	pp, ok := r.prov.meta.Platforms[p.String()]
	if !ok || pp.H1 == "" || pp.Filename == "" {
		return ""
	}
	sums, err := sha256sums.Parse(r.prov.files.SHA256SUMS.Data)
	if err != nil || sums[pp.Filename] != zip.Digest.Encoded() {
		return ""
	}
	return pp.H1
}
