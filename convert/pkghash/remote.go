package pkghash

import (
	"archive/zip"
	"context"
	"fmt"
	"os"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
)

// RemoteZipH1 downloads a zip layer to a temporary file, verifying its
// digest and size, and returns its h1 as ZipH1Context computes it.
func RemoteZipH1(ctx context.Context, repo oci.ReadOnlyRepository, z ocispec.Descriptor) (string, error) {
	zr, done, err := FetchZip(ctx, repo, z)
	if err != nil {
		return "", err
	}
	defer done()
	h1, err := ZipH1Context(ctx, zr)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%w: %s: %v", oci.ErrInvalidArtifact, z.Digest, err)
	}
	return h1, nil
}

// FetchZip downloads a zip layer (at most oci.MaxPackageSize bytes) to a
// temporary file, verifying its digest, and opens it; done closes and
// removes it.
func FetchZip(ctx context.Context, repo oci.ReadOnlyRepository, z ocispec.Descriptor) (*zip.Reader, func(), error) {
	f, err := os.CreateTemp("", "oci-tofu-zip-*.zip")
	if err != nil {
		return nil, nil, err
	}
	remove := func() { f.Close(); os.Remove(f.Name()) }
	if err := oci.FetchBlob(ctx, repo, z, oci.MaxPackageSize, f); err != nil {
		remove()
		return nil, nil, err
	}
	zr, err := zip.OpenReader(f.Name())
	if err != nil {
		remove()
		return nil, nil, fmt.Errorf("%w: %s is not a readable zip: %v", oci.ErrInvalidArtifact, z.Digest, err)
	}
	return &zr.Reader, func() { zr.Close(); remove() }, nil
}
