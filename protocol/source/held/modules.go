package held

import (
	"context"
	"log/slog"
	"sync"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Modules is the source of the module packages (oci-tofu push module, or
// any tool writing OpenTofu's modulepkg) one mapping holds: the
// repositories Template maps module addresses to.
type Modules struct {
	Template *repotemplate.Template
	Store    *store.Store
	Log      *slog.Logger

	repos repoCache // a's repository, as Repo found it
}

var (
	_ source.Modules        = (*Modules)(nil)
	_ source.ModulePackages = (*Modules)(nil)
)

// Repo is the repository of a: NotFound marked ErrNotMapped when the
// template has none for it.
func (m *Modules) Repo(a source.ModuleAddress) (*store.Repo, error) {
	if repo, ok := m.repos.get(a); ok {
		return repo, nil
	}
	ref, err := m.Template.Expand(a.Module.TemplateValues(a.Host))
	if err != nil {
		return nil, source.MarkNotMapped(source.NotFoundf("module %s has no repository here: %v", a.Module, err))
	}
	repo := m.Store.Repo(ref)
	m.repos.put(a, repo)
	return repo, nil
}

// ModuleVersions lists the versions whose canonical tag the repository
// holds (each Stored); a version whose tags do not resolve is left out.
func (m *Modules) ModuleVersions(ctx context.Context, a source.ModuleAddress) (source.ModuleListing, error) {
	repo, err := m.Repo(a)
	if err != nil {
		return source.ModuleListing{}, err
	}
	l, err := repo.VersionsShared(ctx)
	out := source.ModuleListing{Listing: source.Listing{At: l.At}}
	if err != nil {
		return out, source.Missing(err, a.What(), "unknown module %s", a.Module)
	}
	out.Versions = make([]source.Listed, 0, len(l.Versions))
	for _, v := range l.Versions {
		if len(l.Unresolvable) == 0 || l.Unresolvable[v.String()] == "" { // String formats: skip it when every tag resolves
			out.Versions = append(out.Versions, source.Listed{Version: v, Stored: true})
		}
	}
	return out, nil
}

// ModuleRelease reads the module package version v's tag names. A tag
// that does not name a module package is logged.
func (m *Modules) ModuleRelease(ctx context.Context, a source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	repo, err := m.Repo(a)
	if err != nil {
		return nil, err
	}
	manifest, _, err := repo.Module(ctx, names.TagForVersion(v))
	if err != nil {
		if store.FailureOf(err) == oci.FailureInvalid {
			m.Log.LogAttrs(ctx, slog.LevelWarn, "module version left out: not a module package",
				slog.String("module", a.Module.String()), slog.String("version", v.String()), slog.Any("error", err))
		}
		return nil, source.MarkNotHeld(source.Missing(err, a.What(), "module %s has no version %s", a.Module, v))
	}
	return &source.ModuleRelease{Version: v, Root: &source.Root{Repo: repo, Digest: manifest.Digest}}, nil
}

// FetchModule is ModuleRelease: what the registry holds is all there is.
func (m *Modules) FetchModule(ctx context.Context, a source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	return m.ModuleRelease(ctx, a, v)
}

// OpenModule is the zip of the package with that manifest digest, which
// must be what version v's tag names or named: archive URLs pin it.
func (m *Modules) OpenModule(ctx context.Context, a source.ModuleAddress, v names.Version, manifest digest.Digest) (*source.Blob, error) {
	repo, err := m.Repo(a)
	if err != nil {
		return nil, err
	}
	zip, err := repo.ModuleAt(ctx, names.TagForVersion(v), manifest)
	if err != nil {
		return nil, source.Missing(err, a.What(), "module %s has no package with manifest %s", a.Module, manifest)
	}
	return &source.Blob{Name: names.ModuleZipName(a.Module, v), ContentType: "application/zip", Pinned: true, Repo: repo, Layer: zip}, nil
}

// ModulePackage is the zip version v's tag names, for the log.
func (m *Modules) ModulePackage(ctx context.Context, a source.ModuleAddress, v names.Version) (*store.Repo, ocispec.Descriptor, error) {
	repo, err := m.Repo(a)
	if err != nil {
		return nil, ocispec.Descriptor{}, err
	}
	_, zip, err := repo.Module(ctx, names.TagForVersion(v))
	return repo, zip, err
}

// maxRepos bounds a repoCache: past it the cache starts again empty,
// so addresses nobody holds, asked in a flood, cost memory only up to it.
const maxRepos = 16384

// repoCache remembers the repository a template maps each module
// address to (a store.Repo is a name and never changes), sparing a
// catalogue search the template's expansion for every module it reads.
type repoCache struct {
	mu    sync.RWMutex
	repos map[source.ModuleAddress]*store.Repo
}

func (c *repoCache) get(a source.ModuleAddress) (*store.Repo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	repo, ok := c.repos[a]
	return repo, ok
}

func (c *repoCache) put(a source.ModuleAddress, repo *store.Repo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.repos == nil || len(c.repos) >= maxRepos {
		c.repos = make(map[source.ModuleAddress]*store.Repo)
	}
	c.repos[a] = repo
}
