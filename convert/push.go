package convert

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ErrVersionExists is returned when a version tag holds other content.
var ErrVersionExists = errors.New("version already exists")

// PushProviderRelease pushes a verified release under its version tag.
//
// When the tag already holds exactly this release it answers UpToDate
// without unpacking the zips again: it borrows the stored h1 hashes, builds
// the index, and compares digests. The index digest covers every zip digest
// and every provenance file (the signed SHA256SUMS among them), so a match
// means the registry holds this very release; with DeferZipCheck the local
// zips are then not even read, since nothing is written.
//
// A version tag that holds different content is not replaced unless replace
// is set: versions are expected to be immutable, and lock files elsewhere
// may pin the old packages.
//
// Otherwise the zips upload while their h1 hashes are computed; provenance,
// manifests and finally the tag follow.
func PushProviderRelease(ctx context.Context, repo oci.Repository, rel *ProviderRelease, replace bool, opts oci.PushOptions) (oci.PushResult, error) {
	v, err := names.ParseVersion(rel.Version)
	if err != nil {
		return oci.PushResult{}, err
	}
	tag := names.TagForVersion(v)
	current, err := repo.Resolve(ctx, tag)
	switch {
	case err == nil:
		if rel.sameAs(ctx, repo, v, current) {
			return oci.PushResult{Root: current, UpToDate: true}, nil
		}
		if !replace {
			return oci.PushResult{}, fmt.Errorf("%w: %s already holds different content (%s); pass --replace to overwrite it", ErrVersionExists, tag, current.Digest)
		}
	case !oci.IsNotFound(err):
		return oci.PushResult{}, fmt.Errorf("resolving %s: %w", tag, err)
	}

	// Nothing is written before every zip has been read and checked.
	if err := rel.VerifyPackages(); err != nil {
		return oci.PushResult{}, err
	}
	var early oci.PushResult
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		early, err = oci.PushBlobs(gctx, repo, rel.zipBlobs(), opts)
		return err
	})
	g.Go(rel.HashPackages)
	if err := g.Wait(); err != nil {
		return oci.PushResult{}, err
	}
	a, err := rel.Artifact()
	if err != nil {
		return oci.PushResult{}, err
	}
	opts.Progress = nil // the large part is done
	res, err := oci.Push(ctx, repo, a, []string{tag}, opts)
	res.Uploaded += early.Uploaded
	// Push found every zip present again: those uploaded early are not
	// skips, those already there before (early.Skipped) still are.
	res.Skipped -= early.Uploaded
	res.UploadedBytes += early.UploadedBytes
	return res, err
}

// sameAs reports whether the index at current is what rel would push,
// using the h1 hashes stored with it instead of unpacking every zip.
func (rel *ProviderRelease) sameAs(ctx context.Context, repo oci.Repository, v names.Version, current ocispec.Descriptor) bool {
	pv, err := oci.ReadProviderIndex(ctx, repo, current)
	if err != nil || pv.Provenance == nil {
		return false
	}
	stored, _, err := oci.ReadProvenance(ctx, repo, *pv.Provenance)
	if err != nil {
		return false
	}
	trial := *rel
	trial.Packages = append([]ReleasePackage(nil), rel.Packages...)
	for i := range trial.Packages {
		p, ok := stored.Platforms[trial.Packages[i].Platform.String()]
		if !ok || p.H1 == "" {
			return false
		}
		trial.Packages[i].H1 = p.H1
	}
	a, err := trial.build()
	return err == nil && a.Root().Digest == current.Digest
}

func (rel *ProviderRelease) zipBlobs() []oci.Blob {
	blobs := make([]oci.Blob, len(rel.Packages))
	for i, p := range rel.Packages {
		blobs[i] = oci.Blob{Descriptor: p.zipDescriptor(), Open: p.open}
	}
	return blobs
}

func (p ReleasePackage) zipDescriptor() ocispec.Descriptor {
	return ocispec.Descriptor{
		MediaType: oci.MediaTypeZip,
		Digest:    digest.NewDigestFromEncoded(digest.SHA256, p.SHA256),
		Size:      p.Size,
	}
}

func (p ReleasePackage) open() (io.ReadCloser, error) { return os.Open(p.Path) }
