package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ErrVersionExists is returned when a version tag holds other content.
var ErrVersionExists = errors.New("version already exists")

// Artifact reads and checks every zip (Check) and builds the OCI artifact:
// the provider index OpenTofu reads, plus oci-tofu's provenance manifest.
func (rel *Provider) Artifact(ctx context.Context) (*oci.Artifact, error) {
	h1, err := rel.Check(ctx)
	if err != nil {
		return nil, err
	}
	return rel.build(h1)
}

// build assembles the artifact from the packages and their h1 hashes.
func (rel *Provider) build(h1 map[names.Platform]string) (*oci.Artifact, error) {
	pkgs, pa, err := rel.parts(h1)
	if err != nil {
		return nil, err
	}
	return oci.BuildProvider(pkgs, pa)
}

// parts are the packages and provenance an artifact is built from.
func (rel *Provider) parts(h1 map[names.Platform]string) ([]oci.ProviderPackage, *oci.ProvenanceArtifact, error) {
	prov := oci.Provenance{
		Type:          rel.Type,
		Version:       rel.Version,
		Protocols:     rel.Protocols,
		SigningKeyIDs: rel.KeyIDs,
		Platforms:     map[string]oci.ProvenancePlatform{},
	}
	pkgs := make([]oci.ProviderPackage, len(rel.Packages))
	for i, p := range rel.Packages {
		prov.Platforms[p.Platform.String()] = oci.ProvenancePlatform{Filename: p.Filename, H1: h1[p.Platform]}
		pkgs[i] = oci.ProviderPackage{Platform: p.Platform, Zip: p.zipDescriptor(), Open: p.open}
	}
	pa, err := oci.BuildProvenance(prov, rel.Files)
	return pkgs, pa, err
}

// Push pushes the release under its version tag.
//
// When the tag already holds exactly this release it answers UpToDate
// without reading the zips: it borrows the h1 hashes stored with the
// release, builds the index and compares digests. The index digest covers
// every zip digest and every provenance file (the signed SHA256SUMS among
// them), so a match means the registry holds this very release.
//
// A version tag that holds different content is not replaced unless
// replace is set: versions are expected to be immutable, and lock files
// elsewhere may pin the old packages.
//
// Otherwise every zip is read and checked before anything is written; then
// the zips upload while their h1 hashes are computed, and provenance,
// manifests and finally the tag follow.
func (rel *Provider) Push(ctx context.Context, repo oci.Repository, replace bool, opts oci.PushOptions) (oci.PushResult, error) {
	tag, tags, err := versionTag(ctx, repo, rel.Version)
	if err != nil {
		return oci.PushResult{}, err
	}
	if held := tags[tag]; held != "" {
		if root, ok := rel.heldAs(ctx, repo, held); ok {
			return oci.PushResult{Root: root, UpToDate: true}, nil
		}
		if !replace {
			return oci.PushResult{}, versionExists(tag, held)
		}
	}
	if err := rel.CheckDigests(ctx); err != nil {
		return oci.PushResult{}, err
	}
	up := oci.NewUpload(repo, opts)
	h1, err := rel.uploadZipsWhileHashing(ctx, up)
	if err != nil {
		return oci.PushResult{}, err
	}
	a, err := rel.build(h1)
	if err != nil {
		return oci.PushResult{}, err
	}
	return up.Commit(ctx, a, tags)
}

// uploadZipsWhileHashing uploads the zips and computes their h1 hashes at
// the same time: the network and the CPU work in parallel.
func (rel *Provider) uploadZipsWhileHashing(ctx context.Context, up *oci.Upload) (map[names.Platform]string, error) {
	var h1 map[names.Platform]string
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return up.Blobs(gctx, rel.zipBlobs()) })
	g.Go(func() (err error) { h1, err = rel.hashPackages(gctx); return err })
	return h1, g.Wait()
}

// hashPackages computes each package's h1 (unpacking every zip), in
// parallel, without checking digests again.
func (rel *Provider) hashPackages(ctx context.Context) (map[names.Platform]string, error) {
	h1 := make([]string, len(rel.Packages))
	var g errgroup.Group
	g.SetLimit(runtime.NumCPU())
	for i, p := range rel.Packages {
		g.Go(func() (err error) {
			h1[i], err = p.h1(ctx)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	out := make(map[names.Platform]string, len(h1))
	for i, p := range rel.Packages {
		out[p.Platform] = h1[i]
	}
	return out, nil
}

// heldAs reports whether the index at held is what rel would push, using
// the h1 hashes stored with it instead of unpacking every zip.
func (rel *Provider) heldAs(ctx context.Context, repo oci.Repository, held digest.Digest) (ocispec.Descriptor, bool) {
	desc, err := repo.Resolve(ctx, held.String())
	if err != nil {
		return desc, false
	}
	pv, err := oci.ReadProviderIndex(ctx, repo, desc)
	if err != nil || pv.Provenance == nil {
		return desc, false
	}
	prov, _, err := oci.ReadProvenance(ctx, repo, *pv.Provenance)
	if err != nil {
		return desc, false
	}
	stored := map[names.Platform]string{}
	for _, p := range rel.Packages {
		if stored[p.Platform] = prov.Platforms[p.Platform.String()].H1; stored[p.Platform] == "" {
			return desc, false
		}
	}
	return desc, rel.builds(stored, held)
}

// builds reports whether rel, with the given h1 hashes, makes the index
// held, as oci-tofu builds indexes now or as earlier versions did.
func (rel *Provider) builds(h1 map[names.Platform]string, held digest.Digest) bool {
	pkgs, pa, err := rel.parts(h1)
	if err != nil {
		return false
	}
	for _, build := range []func([]oci.ProviderPackage, *oci.ProvenanceArtifact) (*oci.Artifact, error){oci.BuildProvider, oci.BuildProviderUnannotated} {
		if a, err := build(pkgs, pa); err == nil && a.Root().Digest == held {
			return true
		}
	}
	return false
}

func (rel *Provider) zipBlobs() []oci.Blob {
	blobs := make([]oci.Blob, len(rel.Packages))
	for i, p := range rel.Packages {
		blobs[i] = oci.Blob{Descriptor: p.zipDescriptor(), Open: p.open}
	}
	return blobs
}

func (p Package) zipDescriptor() ocispec.Descriptor {
	return ocispec.Descriptor{
		MediaType: oci.MediaTypeZip,
		Digest:    digest.NewDigestFromEncoded(digest.SHA256, p.SHA256),
		Size:      p.Size,
	}
}

func (p Package) open() (io.ReadCloser, error) { return localfile.OpenRegular(p.Path) }

// versionTag is a version's tag and what it holds now.
func versionTag(ctx context.Context, repo oci.ReadOnlyRepository, version string) (string, oci.Tags, error) {
	v, err := names.ParseVersion(version)
	if err != nil {
		return "", nil, err
	}
	tag := names.TagForVersion(v)
	tags, err := oci.CurrentTags(ctx, repo, []string{tag})
	return tag, tags, err
}

// versionExists refuses to replace a version tag holding other content.
func versionExists(tag string, held digest.Digest) error {
	return fmt.Errorf("%w: %s already holds different content (%s); pass --replace to overwrite it", ErrVersionExists, tag, held)
}
