package convert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// MirrorVersionJSON is a provider network mirror <version>.json document, as
// `tofu providers mirror` writes it and the network mirror protocol serves it.
type MirrorVersionJSON struct {
	Archives map[string]MirrorArchive `json:"archives"`
}

// MirrorArchive is one platform's entry in <version>.json.
type MirrorArchive struct {
	URL    string   `json:"url"`
	Hashes []string `json:"hashes,omitempty"`
}

// MirrorIndexJSON is a network mirror index.json document.
type MirrorIndexJSON struct {
	Versions map[string]struct{} `json:"versions"`
}

// MirrorRelease is one provider version read from a mirror directory.
type MirrorRelease struct {
	Addr    names.Provider
	Release *ProviderRelease
	// cleanup removes zips packed from unpacked-layout directories.
	cleanup []string
}

// Close removes temporary files made while reading.
func (m *MirrorRelease) Close() {
	for _, f := range m.cleanup {
		os.Remove(f)
	}
}

// ReadMirrorDir reads a directory written by `tofu providers mirror` or
// `terraform providers mirror` (packed layout: HOST/NS/TYPE/<version>.json
// with the zips beside it) and verifies every zip against the hashes its
// version.json records. Provider versions in the unpacked layout
// (HOST/NS/TYPE/VERSION/OS_ARCH/…) are packed into deterministic zips; their
// h1 is that of the files, but their zh is new.
func ReadMirrorDir(ctx context.Context, dir string) ([]*MirrorRelease, error) {
	var out []*MirrorRelease
	fail := func(err error) ([]*MirrorRelease, error) {
		for _, r := range out {
			r.Close()
		}
		return nil, err
	}
	typeDirs, err := filepath.Glob(filepath.Join(dir, "*", "*", "*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(typeDirs)
	for _, td := range typeDirs {
		if st, err := os.Stat(td); err != nil || !st.IsDir() {
			continue
		}
		rel, _ := filepath.Rel(dir, td)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		addr, err := names.ParseProvider(strings.Join(parts, "/"))
		if err != nil {
			return fail(fmt.Errorf("%s: %w", td, err))
		}
		entries, err := os.ReadDir(td)
		if err != nil {
			return fail(err)
		}
		for _, e := range entries {
			name := e.Name()
			switch {
			case !e.IsDir() && strings.HasSuffix(name, ".json") && name != "index.json":
				r, err := readPackedVersion(td, addr, strings.TrimSuffix(name, ".json"))
				if err != nil {
					return fail(err)
				}
				out = append(out, r)
			case e.IsDir():
				if _, err := names.ParseVersion(name); err != nil {
					continue
				}
				if _, err := os.Stat(filepath.Join(td, name+".json")); err == nil {
					continue // the packed form of the same version is preferred
				}
				r, err := readUnpackedVersion(ctx, filepath.Join(td, name), addr, name)
				if err != nil {
					return fail(err)
				}
				out = append(out, r)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no provider mirror (HOST/NAMESPACE/TYPE/<version>.json)", dir)
	}
	return out, nil
}

func readPackedVersion(typeDir string, addr names.Provider, version string) (*MirrorRelease, error) {
	if _, err := names.ParseVersion(version); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(typeDir, version+".json"), err)
	}
	jsonPath := filepath.Join(typeDir, version+".json")
	data, err := readBounded(jsonPath, maxSmallFile)
	if err != nil {
		return nil, err
	}
	var doc MirrorVersionJSON
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", jsonPath, err)
	}
	if len(doc.Archives) == 0 {
		return nil, fmt.Errorf("%s lists no archives", jsonPath)
	}
	rel := &ProviderRelease{Type: addr.Type, Version: version}
	for key, a := range doc.Archives {
		p, err := names.ParsePlatform(key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", jsonPath, err)
		}
		name, err := localArchiveName(a.URL)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", jsonPath, key, err)
		}
		pkg, err := checkZip(filepath.Join(typeDir, name), nil, "")
		if err != nil {
			return nil, err
		}
		pkg.Platform = p
		if err := pkg.matchRecorded(a.Hashes); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rel.Packages = append(rel.Packages, *pkg)
	}
	sort.Slice(rel.Packages, func(i, j int) bool { return rel.Packages[i].Platform.String() < rel.Packages[j].Platform.String() })
	return &MirrorRelease{Addr: addr, Release: rel}, nil
}

// localArchiveName accepts only a file beside the JSON document: imports
// are offline and must not read outside the mirror.
func localArchiveName(u string) (string, error) {
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme != "" || parsed.Host != "" || strings.Contains(parsed.Path, "/") || parsed.Path == "" || parsed.Path == "." || parsed.Path == ".." {
		return "", fmt.Errorf("archive url %q is not a file name beside the JSON document", u)
	}
	return parsed.Path, nil
}

// matchRecorded checks a zip against the hashes a mirror recorded: every
// zh must be its sha256, and every h1 either its unpacked hash or the
// archive hash older tools wrote; at least one must be there.
func (p *ReleasePackage) matchRecorded(hashes []string) error {
	if len(hashes) == 0 {
		return errors.New("version.json records no hash for it: nothing to verify against")
	}
	var legacy string
	matched := false
	for _, h := range hashes {
		switch {
		case strings.HasPrefix(h, "zh:"):
			if h != ZH(p.SHA256) {
				return fmt.Errorf("sha256 %s does not match the recorded %s", p.SHA256, h)
			}
			matched = true
		case strings.HasPrefix(h, "h1:"):
			if p.H1 == "" {
				h1, err := HashZipFileH1(p.Path)
				if err != nil {
					return err
				}
				p.H1 = h1
			}
			if h == p.H1 {
				matched = true
				continue
			}
			if legacy == "" {
				var err error
				if legacy, err = dirhash.HashZip(p.Path, dirhash.Hash1); err != nil {
					return err
				}
			}
			if h != legacy {
				return fmt.Errorf("h1 %s does not match the recorded %s", p.H1, h)
			}
			matched = true
		}
	}
	if !matched {
		return fmt.Errorf("version.json records no h1 or zh hash for it (%v)", hashes)
	}
	return nil
}

func readUnpackedVersion(ctx context.Context, versionDir string, addr names.Provider, version string) (*MirrorRelease, error) {
	entries, err := os.ReadDir(versionDir)
	if err != nil {
		return nil, err
	}
	r := &MirrorRelease{Addr: addr, Release: &ProviderRelease{Type: addr.Type, Version: version}}
	for _, e := range entries {
		p, err := names.ParsePlatform(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		z, err := PackModule(ctx, filepath.Join(versionDir, e.Name()), PackModuleOptions{AllowNoRoot: true})
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("%s: %w", filepath.Join(versionDir, e.Name()), err)
		}
		r.cleanup = append(r.cleanup, z.Path)
		r.Release.Packages = append(r.Release.Packages, ReleasePackage{
			Platform: p, Path: z.Path, SHA256: z.Digest.Encoded(), Size: z.Size,
			Filename: names.ProviderZipName(addr.Type, version, p),
		})
	}
	if len(r.Release.Packages) == 0 {
		return nil, fmt.Errorf("%s holds no os_arch directories", versionDir)
	}
	return r, nil
}

// ExportOptions configure ExportProvider.
type ExportOptions struct {
	Platforms []names.Platform // empty: every platform
}

// ExportProvider writes the given versions of a provider into dir in the
// packed `providers mirror` layout: HOST/NS/TYPE/ with the zips,
// <version>.json (h1 and zh for each archive) and index.json. The result
// serves as a static network mirror or as a filesystem_mirror. Every zip is
// digest-checked while written, into a temporary file renamed into place.
func ExportProvider(ctx context.Context, repo oci.ReadOnlyRepository, addr names.Provider, vs []names.Version, dir string, opts ExportOptions) error {
	typeDir := filepath.Join(dir, addr.Hostname, addr.Namespace, addr.Type)
	if err := os.MkdirAll(typeDir, 0o755); err != nil {
		return err
	}
	index := MirrorIndexJSON{Versions: map[string]struct{}{}}
	if b, err := readBounded(filepath.Join(typeDir, "index.json"), maxSmallFile); err == nil {
		json.Unmarshal(b, &index)
		if index.Versions == nil {
			index.Versions = map[string]struct{}{}
		}
	}
	for _, v := range vs {
		pv, err := oci.ResolveProvider(ctx, repo, v)
		if err != nil {
			return fmt.Errorf("%s %s: %w", addr, v, err)
		}
		var prov *oci.Provenance
		if pv.Provenance != nil {
			if prov, _, err = oci.ReadProvenance(ctx, repo, *pv.Provenance); err != nil {
				return err
			}
		}
		doc := MirrorVersionJSON{Archives: map[string]MirrorArchive{}}
		platforms := opts.Platforms
		if len(platforms) == 0 {
			platforms = sortedPlatforms(pv.Platforms)
		}
		for _, p := range platforms {
			md, ok := pv.Platforms[p]
			if !ok {
				return fmt.Errorf("%s %s has no package for %s", addr, v, p)
			}
			zip, err := oci.ReadProviderPackage(ctx, repo, md)
			if err != nil {
				return fmt.Errorf("%s %s %s: %w", addr, v, p, err)
			}
			name := names.ProviderZipName(addr.Type, v.String(), p)
			if err := fetchToFile(ctx, repo, zip, filepath.Join(typeDir, name)); err != nil {
				return err
			}
			h1 := ""
			if prov != nil {
				h1 = prov.Platforms[p.String()].H1
			}
			if h1 == "" {
				if h1, err = HashZipFileH1(filepath.Join(typeDir, name)); err != nil {
					return err
				}
			}
			doc.Archives[p.String()] = MirrorArchive{URL: name, Hashes: []string{h1, ZH(zip.Digest.Encoded())}}
		}
		b, _ := json.MarshalIndent(doc, "", "  ")
		if err := WriteFileAtomic(filepath.Join(typeDir, v.String()+".json"), append(b, '\n')); err != nil {
			return err
		}
		index.Versions[v.String()] = struct{}{}
	}
	b, _ := json.MarshalIndent(index, "", "  ")
	return WriteFileAtomic(filepath.Join(typeDir, "index.json"), append(b, '\n'))
}

func fetchToFile(ctx context.Context, repo oci.ReadOnlyRepository, desc ocispec.Descriptor, path string) error {
	return ReplaceFile(path, func(w io.Writer) error { return oci.FetchBlob(ctx, repo, desc, 4<<30, w) })
}

// WriteFileAtomic replaces path only once the new content is complete.
func WriteFileAtomic(path string, data []byte) error {
	return ReplaceFile(path, func(w io.Writer) error { _, err := w.Write(data); return err })
}

// ReplaceFile writes a temporary file beside path with write, and renames
// it over path only when write succeeded: readers never see a partial file.
func ReplaceFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".oci-tofu-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
