package seed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
)

// ManyPlatforms are fifteen platforms, about what the largest providers
// (hashicorp/aws) ship for.
var ManyPlatforms = []names.Platform{
	{OS: "darwin", Arch: "amd64"}, {OS: "darwin", Arch: "arm64"},
	{OS: "freebsd", Arch: "386"}, {OS: "freebsd", Arch: "amd64"}, {OS: "freebsd", Arch: "arm"},
	{OS: "linux", Arch: "386"}, {OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm"}, {OS: "linux", Arch: "arm64"},
	{OS: "openbsd", Arch: "386"}, {OS: "openbsd", Arch: "amd64"}, {OS: "solaris", Arch: "amd64"},
	{OS: "windows", Arch: "386"}, {OS: "windows", Arch: "amd64"}, {OS: "windows", Arch: "arm64"},
}

// AnnotationSeedVersion marks the indexes ListingProvider derives with
// the version they are tagged as, which makes each of them distinct.
const AnnotationSeedVersion = "org.opencontainers.image.version"

// referencePusher uploads a manifest and tags it in one request (what a
// registry repository of oras-go does).
type referencePusher interface {
	PushReference(ctx context.Context, expected ocispec.Descriptor, content io.Reader, reference string) error
}

// ListingProvider pushes opts.Versions versions fast, for what reads the
// indexes alone (the registry protocol's /versions, the mirror's
// index.json): Version(0) is a whole signed release, pushed as Provider
// pushes it; each later version is one index upload, Version(0)'s index
// with an annotation naming the version, so every version has an index
// of its own (distinct digests, as real releases have) that names
// Version(0)'s platform manifests and provenance. The documents of a
// later version other than the listings are therefore Version(0)'s.
func ListingProvider(ctx context.Context, repo oci.Repository, dir string, opts Options) error {
	n := opts.Versions
	opts.Versions = 1
	if err := Provider(ctx, repo, dir, opts); err != nil || n <= 1 {
		return err
	}
	_, base, err := oci.FetchReference(ctx, repo, names.TagForVersion(names.MustParseVersion(Version(0))))
	if err != nil {
		return err
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for i := 1; i < n; i++ {
		g.Go(func() error { return pushDerivedIndex(gctx, repo, base, Version(i)) })
	}
	return g.Wait()
}

// DerivedIndex is the index ListingProvider tags as version v: base (the
// first version's index) annotated with v.
func DerivedIndex(base []byte, v string) ([]byte, error) {
	var idx ocispec.Index
	if err := json.Unmarshal(base, &idx); err != nil {
		return nil, err
	}
	ann := map[string]string{AnnotationSeedVersion: v}
	for k, val := range idx.Annotations {
		ann[k] = val
	}
	idx.Annotations = ann
	m, err := oci.EncodeIndex(idx)
	if err != nil {
		return nil, err
	}
	return m.Bytes, nil
}

// pushDerivedIndex uploads DerivedIndex(base, v), tagged v.
func pushDerivedIndex(ctx context.Context, repo oci.Repository, base []byte, v string) error {
	body, err := DerivedIndex(base, v)
	if err != nil {
		return err
	}
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: oci.ArtifactTypeProvider, Digest: digest.FromBytes(body), Size: int64(len(body))}
	tag := names.TagForVersion(names.MustParseVersion(v))
	if rp, ok := repo.(referencePusher); ok {
		return rp.PushReference(ctx, desc, bytes.NewReader(body), tag)
	}
	if err := repo.Push(ctx, desc, bytes.NewReader(body)); err != nil {
		return err
	}
	return repo.Tag(ctx, desc, tag)
}

// PlatformsProvider is ListingProvider with platform manifests of each
// version's own: each later version's index names copies of Version(0)'s
// platform manifests annotated with the version (distinct digests, the
// same zips), for what reads per platform manifest (its SBOM referrers,
// its signatures). Version(0)'s provenance is shared.
func PlatformsProvider(ctx context.Context, repo oci.Repository, dir string, opts Options) error {
	n := opts.Versions
	opts.Versions = 1
	if err := Provider(ctx, repo, dir, opts); err != nil || n <= 1 {
		return err
	}
	_, base, err := oci.FetchReference(ctx, repo, names.TagForVersion(names.MustParseVersion(Version(0))))
	if err != nil {
		return err
	}
	var idx ocispec.Index
	if err := json.Unmarshal(base, &idx); err != nil {
		return err
	}
	manifests := make([][]byte, len(idx.Manifests))
	for i, d := range idx.Manifests {
		if d.Platform == nil {
			continue
		}
		if manifests[i], err = oci.FetchManifest(ctx, repo, d); err != nil {
			return err
		}
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for i := 1; i < n; i++ {
		g.Go(func() error {
			v := Version(i)
			derived := idx
			derived.Manifests = append([]ocispec.Descriptor(nil), idx.Manifests...)
			for j, body := range manifests {
				if body == nil {
					continue
				}
				var m ocispec.Manifest
				if err := json.Unmarshal(body, &m); err != nil {
					return err
				}
				ann := map[string]string{AnnotationSeedVersion: v}
				for k, val := range m.Annotations {
					ann[k] = val
				}
				m.Annotations = ann
				enc, err := oci.EncodeManifest(m)
				if err != nil {
					return err
				}
				d := derived.Manifests[j]
				d.Digest, d.Size = digest.FromBytes(enc.Bytes), int64(len(enc.Bytes))
				if err := repo.Push(gctx, d, bytes.NewReader(enc.Bytes)); err != nil {
					return err
				}
				derived.Manifests[j] = d
			}
			body, err := json.Marshal(derived)
			if err != nil {
				return err
			}
			return pushDerivedIndex(gctx, repo, body, v)
		})
	}
	return g.Wait()
}

// VersionIndex writes the version index (oci/versionindex) of
// ListingProvider's first n versions, whose first index is base, as
// push provider leaves it after publishing them one after another; it
// returns the index's size in bytes. Every entry carries the provenance
// hints push writes.
func VersionIndex(ctx context.Context, repo oci.Repository, base []byte, n int) (int, error) {
	entries := map[string]versionindex.Entry{}
	var hints []ocispec.Descriptor // the provenance every version shares
	for i := range n {
		v := Version(i)
		body := base
		if i > 0 {
			var err error
			if body, err = DerivedIndex(base, v); err != nil {
				return 0, err
			}
		}
		desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, ArtifactType: oci.ArtifactTypeProvider, Digest: digest.FromBytes(body), Size: int64(len(body))}
		pv, err := oci.ParseProviderIndex(desc, body)
		if err != nil {
			return 0, err
		}
		pv.Version = names.MustParseVersion(v)
		e, ok := versionindex.EntryOf(pv)
		if !ok {
			return 0, fmt.Errorf("version %s has no provenance summary", v)
		}
		if hints == nil && pv.Provenance != nil {
			m, err := oci.FetchImageManifest(ctx, repo, *pv.Provenance)
			if err != nil {
				return 0, err
			}
			hints = oci.ProvenanceBlobs(m)
		}
		e.ProvenanceBlobs = hints
		entries[v] = e
	}
	m, dropped, err := versionindex.Write(ctx, repo, entries)
	if err == nil && dropped > 0 {
		err = fmt.Errorf("the version index left out %d of %d versions", dropped, n)
	}
	return len(m.Bytes), err
}
