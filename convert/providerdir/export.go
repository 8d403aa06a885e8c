package providerdir

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Options configure Export.
type Options struct {
	Platforms []names.Platform // empty: every platform
}

// Export writes the given versions of a provider into dir in the packed
// `providers mirror` layout: HOST/NS/TYPE/ with the zips, <version>.json
// (h1 and zh for each archive) and index.json. The result serves as a
// static network mirror or as a filesystem_mirror. Every zip is
// digest-checked while written, into a temporary file renamed into place.
func Export(ctx context.Context, repo oci.ReadOnlyRepository, addr names.Provider, vs []names.Version, dir string, opts Options) error {
	typeDir := filepath.Join(dir, addr.Hostname, addr.Namespace, addr.Type)
	if err := os.MkdirAll(typeDir, 0o755); err != nil {
		return err
	}
	index := readIndex(typeDir)
	for _, v := range vs {
		doc, err := exportVersion(ctx, repo, addr, v, typeDir, opts.Platforms)
		if err != nil {
			return err
		}
		if err := writeJSON(filepath.Join(typeDir, v.String()+".json"), doc); err != nil {
			return err
		}
		index.Versions[v.String()] = struct{}{}
	}
	return writeJSON(filepath.Join(typeDir, "index.json"), index)
}

// readIndex reads an existing index.json, so an export adds to it.
func readIndex(typeDir string) wire.MirrorIndex {
	var index wire.MirrorIndex
	if b, err := localfile.ReadBounded(filepath.Join(typeDir, "index.json"), oci.MaxDocument); err == nil {
		json.Unmarshal(b, &index)
	}
	if index.Versions == nil {
		index.Versions = map[string]struct{}{}
	}
	return index
}

// exportVersion writes one version's zips and returns its <version>.json.
func exportVersion(ctx context.Context, repo oci.ReadOnlyRepository, addr names.Provider, v names.Version, typeDir string, platforms []names.Platform) (wire.MirrorVersion, error) {
	doc := wire.MirrorVersion{Archives: map[string]wire.MirrorArchive{}}
	pv, err := oci.ResolveProvider(ctx, repo, v)
	if err != nil {
		return doc, fmt.Errorf("%s %s: %w", addr, v, err)
	}
	var prov *oci.Provenance
	var files *oci.ProvenanceFiles
	if pv.Provenance != nil {
		if prov, files, err = oci.ReadProvenance(ctx, repo, *pv.Provenance); err != nil {
			return doc, err
		}
	}
	if len(platforms) == 0 {
		platforms = pv.SortedPlatforms()
	}
	for _, p := range platforms {
		md, ok := pv.Platforms[p]
		if !ok {
			return doc, fmt.Errorf("%s %s has no package for %s", addr, v, p)
		}
		zip, err := oci.ReadProviderPackage(ctx, repo, md)
		if err != nil {
			return doc, fmt.Errorf("%s %s %s: %w", addr, v, p, err)
		}
		name := names.ProviderZipName(addr.Type, v.String(), p)
		path := filepath.Join(typeDir, name)
		if err := fetchToFile(ctx, repo, zip, path); err != nil {
			return doc, err
		}
		h1 := pkghash.TrustedH1(prov, files, p, zip)
		if h1 == "" {
			if h1, err = pkghash.ZipFileH1Context(ctx, path); err != nil {
				return doc, err
			}
		}
		doc.Archives[p.String()] = wire.MirrorArchive{URL: name, Hashes: []string{h1, pkghash.ZH(zip.Digest.Encoded())}}
	}
	return doc, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return localfile.WriteAtomic(path, append(b, '\n'))
}

func fetchToFile(ctx context.Context, repo oci.ReadOnlyRepository, desc ocispec.Descriptor, path string) error {
	return localfile.Replace(path, func(w io.Writer) error { return oci.FetchBlob(ctx, repo, desc, oci.MaxPackageSize, w) })
}

// ExportMatching exports the versions of repo (ref) that spec's
// constraints allow into dir, and returns them; none is an error naming
// the versions there are.
func ExportMatching(ctx context.Context, repo oci.ReadOnlyRepository, spec names.ProviderSpec, ref oci.Reference, dir string, opts Options) ([]names.Version, error) {
	list, err := oci.ListVersions(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("%s: listing %s: %w", spec.Provider, ref, err)
	}
	vs := names.MatchingVersions(list, spec.Constraints)
	if len(vs) == 0 {
		return nil, fmt.Errorf("%s: no version in %s matches %q (available: %s)", spec.Provider, ref, names.ConstraintsString(spec.Constraints), list)
	}
	return vs, Export(ctx, repo, spec.Provider, vs, dir, opts)
}
