package store

import (
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// maxTofuFiles bounds the files of one release artifact.
const maxTofuFiles = 1000

// StoredTofu is an OpenTofu release artifact as the store read and
// checked it: not its config (oci.TofuRelease) but what serving needs of
// it, the manifest digest and each listed file's layer.
type StoredTofu struct {
	Version string
	// Digest is the release artifact's manifest digest (what its
	// attestation is about).
	Digest digest.Digest
	// Names are the file names in the release config's order.
	Names []string
	// Files maps each file name to its layer.
	Files map[string]ocispec.Descriptor
}

// StoredTofu reads the release artifact version v's tag names, and checks
// that it is what its tag says and that its file list agrees with its
// layers, so a file is served only under the digest and size the release
// records.
func (r *Repo) StoredTofu(ctx context.Context, v names.Version) (*StoredTofu, error) {
	tm, err := r.manifestByTag(ctx, "body", names.TagForVersion(v), keepBody)
	if err != nil {
		return nil, err
	}
	repo, err := r.open(ctx)
	if err != nil {
		return nil, err
	}
	// Keyed by version too: the check that the artifact holds the version
	// its tag names must hold for every tag that names it.
	res, err := r.s.tofu.Get(ctx, r.name+"@"+tm.desc.Digest.String()+" "+v.String(), func(ctx context.Context) (*StoredTofu, int64, error) {
		rel, err := readStoredTofu(ctx, repo, tm.desc, tm.val.([]byte), v)
		return rel, int64(len(tm.val.([]byte))), err
	})
	if err != nil {
		return nil, r.fail(err, "reading an OpenTofu release")
	}
	return res.Val, nil
}

// StoredTofuAt reads the release artifact with manifest digest d, checked
// as StoredTofu checks it, version v included, when v's tag names it
// (taggedAt).
func (r *Repo) StoredTofuAt(ctx context.Context, v names.Version, d digest.Digest) (*StoredTofu, error) {
	repo, err := r.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.taggedAt(ctx, repo, "body", names.TagForVersion(v), d); err != nil {
		return nil, err
	}
	res, err := r.s.tofu.Get(ctx, r.name+"@"+d.String()+" "+v.String(), func(ctx context.Context) (*StoredTofu, int64, error) {
		desc, body, err := manifestAt(ctx, repo, d)
		if err != nil {
			return nil, 0, err
		}
		rel, err := readStoredTofu(ctx, repo, desc, body, v)
		return rel, int64(len(body)), err
	})
	if err != nil {
		return nil, r.fail(err, "reading an OpenTofu release")
	}
	return res.Val, nil
}

func readStoredTofu(ctx context.Context, repo oci.ReadOnlyRepository, desc ocispec.Descriptor, body []byte, v names.Version) (*StoredTofu, error) {
	cfg, layers, err := oci.ReadTofuReleaseBody(ctx, repo, desc, body)
	if err != nil {
		return nil, err
	}
	if cfg.Version != v.String() {
		return nil, fmt.Errorf("%w: the artifact tagged %s holds OpenTofu %q", oci.ErrInvalidArtifact, names.TagForVersion(v), cfg.Version)
	}
	if len(cfg.Files) == 0 || len(cfg.Files) > maxTofuFiles {
		return nil, fmt.Errorf("%w: release %s lists %d files", oci.ErrInvalidArtifact, v, len(cfg.Files))
	}
	rel := &StoredTofu{Version: cfg.Version, Digest: desc.Digest, Files: map[string]ocispec.Descriptor{}}
	for _, f := range cfg.Files {
		if err := rel.add(v, f, layers); err != nil {
			return nil, err
		}
	}
	return rel, nil
}

// add takes one file of a release config, checked against its layer.
func (rel *StoredTofu) add(v names.Version, f oci.TofuReleaseFile, layers map[string]ocispec.Descriptor) error {
	l, ok := layers[f.Name]
	switch {
	case !names.ValidTofuArtifact(f.Name):
		return fmt.Errorf("%w: release %s lists the file name %q", oci.ErrInvalidArtifact, v, f.Name)
	case !ok:
		return fmt.Errorf("%w: release %s lists %s but has no layer for it", oci.ErrInvalidArtifact, v, f.Name)
	case l.Digest != digest.NewDigestFromEncoded(digest.SHA256, f.SHA256) || l.Digest.Validate() != nil || l.Size != f.Size || l.Size < 0:
		return fmt.Errorf("%w: release %s: the layer of %s (%s, %d bytes) is not the listed file (sha256 %s, %d bytes)",
			oci.ErrInvalidArtifact, v, f.Name, l.Digest, l.Size, f.SHA256, f.Size)
	}
	if _, dup := rel.Files[f.Name]; dup {
		return fmt.Errorf("%w: release %s lists %s twice", oci.ErrInvalidArtifact, v, f.Name)
	}
	rel.Files[f.Name] = l
	rel.Names = append(rel.Names, f.Name)
	return nil
}
