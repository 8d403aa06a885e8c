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
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
)

// ErrVersionExists is returned when a version tag holds other content:
// oci.ErrVersionExists, the one rule's error.
var ErrVersionExists = oci.ErrVersionExists

// ErrNotSigned is returned for a release without a signature (or without
// SHA256SUMS) when neither a signer nor an unsigned release was asked for.
var ErrNotSigned = errors.New("has no signature")

// ErrMissingPlatform is returned when SHA256SUMS lists a package the
// release directory lacks and no platforms were chosen.
var ErrMissingPlatform = errors.New("a platform's package is missing")

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

// Push pushes the release under its version tag, and under the also
// tags (pointers such as latest, never another version), following the one
// rule for version tags (oci.Tags.CheckVersions; opts.Replace overrides it).
//
// When the version tag already holds exactly this release, nothing is read
// or checked: the h1 hashes stored with the release rebuild its index, and
// the index digest covers every zip digest and every provenance file (the
// signed SHA256SUMS among them), so a match means the registry holds this
// very release. Only also tags that do not hold it yet are written.
//
// Otherwise every zip is read and checked against SHA256SUMS before the
// rule is applied, so a tampered zip is reported as such, never as other
// content. Then the zips upload while their h1 hashes are computed (only
// hashed when the push will be refused), and provenance, manifests and
// finally the tags follow.
func (rel *Provider) Push(ctx context.Context, repo oci.Repository, opts oci.PushOptions, also ...string) (oci.PushResult, error) {
	tag, tags, err := releaseTags(ctx, repo, rel.Version, also)
	if err != nil {
		return oci.PushResult{}, err
	}
	sboms := rel.newSBOMRun(repo)
	defer sboms.finish()
	opts.BeforeTag = sboms.before(opts.BeforeTag)
	if held, ok := rel.heldAs(ctx, repo, tags[tag]); ok {
		if err := rel.checkTarget(); err != nil {
			return oci.PushResult{}, err
		}
		res, err := oci.Push(ctx, repo, held, tags, opts)
		if err == nil {
			rel.updateVersionIndex(ctx, repo, held)
		}
		return res, sboms.after(ctx, err)
	}
	if err := rel.CheckDigests(ctx); err != nil {
		return oci.PushResult{}, err
	}
	if err := rel.checkTarget(); err != nil {
		return oci.PushResult{}, err
	}
	up := oci.NewUpload(repo, opts)
	upload := !tags.Conflicts(opts.Replace)
	var hashed func(i int, sums map[string]string)
	if upload {
		hashed = sboms.start(ctx, up) // while the zips upload, each once hashed
	}
	h1, err := rel.hashAndUpload(ctx, up, upload, hashed)
	if err != nil {
		return oci.PushResult{}, err
	}
	a, err := rel.build(h1)
	if err != nil {
		return oci.PushResult{}, err
	}
	rel.pushed = &builtRelease{root: a.Root().Digest, h1: h1}
	res, err := up.Commit(ctx, a, tags)
	if err == nil {
		rel.updateVersionIndex(ctx, repo, a)
	}
	return res, sboms.after(ctx, err)
}

// checkTarget checks Repository, when set, with CheckRepository.
func (rel *Provider) checkTarget() error {
	if rel.Repository == "" {
		return nil
	}
	return rel.CheckRepository(rel.Repository)
}

// hashAndUpload computes the packages' h1 hashes and, when upload is set,
// uploads the zips at the same time; hashed, when set, is told each
// package's file sums as soon as its h1 is computed.
func (rel *Provider) hashAndUpload(ctx context.Context, up *oci.Upload, upload bool, hashed func(int, map[string]string)) (map[names.Platform]string, error) {
	if !upload {
		return rel.hashPackagesTelling(ctx, hashed)
	}
	return rel.uploadZipsWhileHashing(ctx, up, hashed)
}

// uploadZipsWhileHashing uploads the zips and computes their h1 hashes at
// the same time: the network and the CPU work in parallel.
func (rel *Provider) uploadZipsWhileHashing(ctx context.Context, up *oci.Upload, hashed func(int, map[string]string)) (map[names.Platform]string, error) {
	var h1 map[names.Platform]string
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return up.Blobs(gctx, rel.zipBlobs()) })
	g.Go(func() (err error) { h1, err = rel.hashPackagesTelling(gctx, hashed); return err })
	return h1, g.Wait()
}

// hashPackages computes each package's h1 (unpacking every zip), in
// parallel, without checking digests again.
func (rel *Provider) hashPackages(ctx context.Context) (map[names.Platform]string, error) {
	return rel.hashPackagesTelling(ctx, nil)
}

// hashPackagesTelling is hashPackages telling hashed, when set, the sha256
// of each package's files (by entry name; nil for an h1 known already)
// once its h1 is computed.
func (rel *Provider) hashPackagesTelling(ctx context.Context, hashed func(int, map[string]string)) (map[names.Platform]string, error) {
	h1 := make([]string, len(rel.Packages))
	var g errgroup.Group
	g.SetLimit(runtime.NumCPU())
	for i, p := range rel.Packages {
		g.Go(func() error {
			var sums map[string]string
			var err error
			h1[i], sums, err = p.h1Sums(ctx)
			if err == nil && hashed != nil {
				hashed(i, sums)
			}
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

// heldAs is the artifact held, when it is what rel would push, using
// the h1 hashes stored with it instead of unpacking every zip.
func (rel *Provider) heldAs(ctx context.Context, repo oci.Repository, held digest.Digest) (*oci.Artifact, bool) {
	if held == "" {
		return nil, false
	}
	desc, err := repo.Resolve(ctx, held.String())
	if err != nil {
		return nil, false
	}
	pv, err := oci.ReadProviderIndex(ctx, repo, desc)
	if err != nil || pv.Provenance == nil {
		return nil, false
	}
	prov, _, err := oci.ReadProvenance(ctx, repo, *pv.Provenance)
	if err != nil {
		return nil, false
	}
	stored := map[names.Platform]string{}
	for _, p := range rel.Packages {
		if stored[p.Platform] = prov.Platforms[p.Platform.String()].H1; stored[p.Platform] == "" {
			return nil, false
		}
	}
	return rel.builds(stored, held)
}

// builds is the artifact rel, with the given h1 hashes, makes when it is
// the index held, as oci-tofu builds indexes now or as earlier versions
// did.
func (rel *Provider) builds(h1 map[names.Platform]string, held digest.Digest) (*oci.Artifact, bool) {
	pkgs, pa, err := rel.parts(h1)
	if err != nil {
		return nil, false
	}
	for _, build := range []func([]oci.ProviderPackage, *oci.ProvenanceArtifact) (*oci.Artifact, error){oci.BuildProvider, oci.BuildProviderUnannotated} {
		if a, err := build(pkgs, pa); err == nil && a.Root().Digest == held {
			return a, true
		}
	}
	return nil, false
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

// releaseTags are a release's version tag and its also tags, with what
// each holds now. An also tag may not be another version: a release's
// version is in its content, and tofu would install it under the wrong one.
func releaseTags(ctx context.Context, repo oci.ReadOnlyRepository, version string, also []string) (string, oci.Tags, error) {
	v, err := names.ParseVersion(version)
	if err != nil {
		return "", nil, err
	}
	tag := names.TagForVersion(v)
	for _, t := range also {
		if t != tag && oci.IsVersionTag(t) {
			return "", nil, fmt.Errorf("also tag %s: a release of %s can be tagged only with its own version and tags that are not versions (such as latest)", t, version)
		}
	}
	tags, err := oci.CurrentTags(ctx, repo, append([]string{tag}, also...))
	return tag, tags, err
}

// The repository's version index (oci/versionindex), updated by every
// push of a release once its version tag is written: push provider, push
// mirror, mirror and pull-through all push through Provider.Push. It is a
// hint for listings: failing to write it is a warning
// (VersionIndexNote), never the push's failure.

// updateVersionIndex sets the pushed release a (tagged now) in repo's
// version index; what went wrong is kept as a note.
// A layout gets none: its listings are read from disk, and a second root
// in its index.json would make `crane push DIR` push both as one index.
func (rel *Provider) updateVersionIndex(ctx context.Context, repo oci.Repository, a *oci.Artifact) {
	rel.indexNote = ""
	if oci.IsLayout(repo) {
		return
	}
	if err := updateIndex(ctx, repo, rel.Version, a); err != nil {
		rel.indexNote = "the repository's version index (tag " + versionindex.Tag + ") was not updated, so listings read this version from its tag: " + err.Error()
	}
}

// VersionIndexNote is the warning of the last Push about the version
// index ("" when it was updated or needed nothing).
func (rel *Provider) VersionIndexNote() string { return rel.indexNote }

func updateIndex(ctx context.Context, repo oci.Repository, version string, a *oci.Artifact) error {
	v, err := names.ParseVersion(version)
	if err != nil {
		return err
	}
	root := a.Manifests[len(a.Manifests)-1]
	e, ok := versionindex.EntryOfPushed(v, root, a.Manifests)
	if !ok {
		return fmt.Errorf("the release's index %s carries no provenance summary", root.Descriptor.Digest)
	}
	_, err = versionindex.Update(ctx, repo, e)
	return err
}
