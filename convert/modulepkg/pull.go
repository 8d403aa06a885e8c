package modulepkg

import (
	"context"
	"fmt"
	"os"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Pulled is a module package pulled and unpacked (Pull).
type Pulled struct {
	Ref      oci.Reference
	Manifest ocispec.Descriptor
	Zip      ocispec.Descriptor
	Dir      string
	Files    []string
}

// Pull resolves ref's module package in repo as OpenTofu does
// (oci.ResolveModule), downloads its zip into a temporary file, checking
// its digest and size (at most maxSize), and unpacks it into dir
// (UnpackContext).
func Pull(ctx context.Context, repo oci.ReadOnlyRepository, ref oci.Reference, dir string, maxSize int64) (*Pulled, error) {
	manifest, layer, err := oci.ResolveModule(ctx, repo, ref.Reference)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	tmp, err := download(ctx, repo, ref, layer, maxSize)
	if tmp != "" {
		defer os.Remove(tmp)
	}
	if err != nil {
		return nil, err
	}
	files, err := UnpackContext(ctx, tmp, dir, maxSize)
	if err != nil {
		return nil, fmt.Errorf("unpacking %s into %s: %w", ref, dir, err)
	}
	return &Pulled{Ref: ref, Manifest: manifest, Zip: layer, Dir: dir, Files: files}, nil
}

// download downloads the package's zip into a temporary file, checking
// its digest and size; the file's name is returned also when the
// download fails, for the caller to remove it.
func download(ctx context.Context, repo oci.ReadOnlyRepository, ref oci.Reference, layer ocispec.Descriptor, maxSize int64) (string, error) {
	tmp, err := os.CreateTemp("", "oci-tofu-module-*.zip")
	if err != nil {
		return "", err
	}
	err = oci.FetchBlob(ctx, repo, layer, maxSize, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return tmp.Name(), fmt.Errorf("%s: %w", ref, err)
	}
	return tmp.Name(), nil
}

// Report tells rep that the zip was verified, and prints what was
// unpacked where (or with rep.JSON the result).
func (p *Pulled) Report(rep *report.Reporter) error {
	rep.Infof("verified the module package's zip (%s, %s)", p.Zip.Digest, names.Plural(int(p.Zip.Size), "byte"))
	return rep.Result(map[string]any{
		"reference":  p.Ref.String(),
		"digest":     p.Manifest.Digest.String(),
		"zip_digest": p.Zip.Digest.String(),
		"zip_size":   p.Zip.Size,
		"dir":        p.Dir,
		"files":      p.Files,
	}, fmt.Sprintf("unpacked %s into %s (%s)", pinned(p.Ref, p.Manifest.Digest.String()), p.Dir, names.Plural(len(p.Files), "file")))
}

// pinned is a reference with the digest it resolved to, written once:
// REPO:TAG@DIGEST, or REPO@DIGEST when a digest was asked for.
func pinned(ref oci.Reference, digest string) string {
	if ref.Reference == digest {
		return ref.String()
	}
	return ref.String() + "@" + digest
}
