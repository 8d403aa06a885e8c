package release

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// packages describes the selected zips: digests from SHA256SUMS, or from
// the files themselves when there is none.
func (rf *releaseFiles) packages(ctx context.Context, sums *sha256sums.File) ([]Package, error) {
	platforms := make([]names.Platform, 0, len(rf.selectedPlatforms))
	for p := range rf.selectedPlatforms {
		platforms = append(platforms, p)
	}
	slices.SortFunc(platforms, names.ComparePlatforms)
	pkgs := make([]Package, len(platforms))
	var g errgroup.Group
	g.SetLimit(runtime.NumCPU())
	for i, p := range platforms {
		name := rf.selectedPlatforms[p]
		g.Go(func() error {
			pkg, err := describePackage(ctx, rf.path(name), sums, rf.sums)
			pkg.Platform = p
			pkgs[i] = pkg
			return err
		})
	}
	return pkgs, g.Wait()
}

// describePackage takes a zip's digest from SHA256SUMS, as OpenTofu looks
// it up, or reads the file when there is none.
func describePackage(ctx context.Context, path string, sums *sha256sums.File, sumsName string) (Package, error) {
	name := filepath.Base(path)
	pkg := Package{Path: path, Filename: name}
	if sums == nil {
		sum, size, err := HashPackageFile(ctx, path)
		pkg.SHA256, pkg.Size = sum, size
		return pkg, err
	}
	want, err := sums.Lookup(name)
	if err != nil {
		return pkg, fmt.Errorf("%s: not listed in %s as OpenTofu reads it: %w", name, sumsName, err)
	}
	f, size, err := openPackageFile(path)
	if err != nil {
		return pkg, err
	}
	f.Close()
	pkg.SHA256, pkg.Size = want, size
	return pkg, nil
}

// openPackageFile opens a release file (a zip, an OpenTofu release file)
// that must be a regular file of at most oci.MaxPackageSize bytes, the
// most a pull, a verify or the proxy reads.
func openPackageFile(path string) (*os.File, int64, error) {
	f, err := localfile.OpenRegular(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if st.Size() > oci.MaxPackageSize {
		f.Close()
		return nil, 0, fmt.Errorf("%s is %d bytes, more than the %d bytes a package may have (pulls, verify and the proxy refuse more; see docs/security.md)", path, st.Size(), int64(oci.MaxPackageSize))
	}
	return f, st.Size(), nil
}

// HashPackageFile is the sha256 (hex) and size of a package file, a
// regular file of at most oci.MaxPackageSize bytes, read cancellably.
func HashPackageFile(ctx context.Context, path string) (string, int64, error) {
	f, _, err := openPackageFile(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	sum, size, err := pkghash.SHA256(localfile.Reader(ctx, io.LimitReader(f, oci.MaxPackageSize+1)))
	if err != nil {
		return "", 0, fmt.Errorf("reading %s: %w", filepath.Base(path), err)
	}
	if size > oci.MaxPackageSize {
		return "", 0, fmt.Errorf("%s grew beyond %d bytes while it was read", filepath.Base(path), int64(oci.MaxPackageSize))
	}
	return sum, size, nil
}

// Check reads every zip: its sha256 must be the one recorded, and it must
// read as an unpacker reads it (CRC and sizes of every entry). It returns
// each package's h1, computed from what unpacking produces.
func (rel *Provider) Check(ctx context.Context) (map[names.Platform]string, error) {
	if err := rel.CheckDigests(ctx); err != nil {
		return nil, err
	}
	return rel.hashPackages(ctx)
}

// CheckDigests reads every zip and compares its sha256 with the one
// recorded, without unpacking anything, and finds in each the executable
// OpenTofu runs for the release's type.
func (rel *Provider) CheckDigests(ctx context.Context) error {
	var g errgroup.Group
	g.SetLimit(runtime.NumCPU())
	for _, p := range rel.Packages {
		g.Go(func() error {
			if err := p.checkDigest(ctx); err != nil {
				return err
			}
			return p.checkExecutable(rel.Type)
		})
	}
	return g.Wait()
}

func (p Package) checkDigest(ctx context.Context) error {
	sum, size, err := HashPackageFile(ctx, p.Path)
	if err != nil {
		return err
	}
	if sum != p.SHA256 {
		return fmt.Errorf("%s: sha256 %s does not match SHA256SUMS (%s): the file was altered or the wrong file", p.Filename, sum, p.SHA256)
	}
	if size != p.Size {
		return fmt.Errorf("%s changed while it was being pushed", p.Filename)
	}
	return nil
}

// h1Sums unpacks the zip, as OpenTofu would, for its h1 hash, and the
// sha256 of each file in it, by entry name (pkghash.ZipH1Sums); no sums
// when the h1 was known already.
func (p Package) h1Sums(ctx context.Context) (string, map[string]string, error) {
	if p.H1 != "" {
		return p.H1, nil, nil
	}
	h1, sums, err := pkghash.ZipFileH1Sums(ctx, p.Path)
	if err != nil {
		if ctx.Err() != nil {
			return "", nil, ctx.Err()
		}
		return "", nil, fmt.Errorf("%s: %w", p.Filename, err)
	}
	return h1, sums, nil
}
