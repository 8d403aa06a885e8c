// Package providerdir reads and writes the directories `tofu providers
// mirror` and `terraform providers mirror` write (packed and unpacked
// layouts): import into OCI artifacts, export from them. An export serves
// as a static network mirror or a filesystem_mirror.
package providerdir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// Release is one provider version read from a mirror directory.
type Release struct {
	Provider names.Provider
	Release  *release.Provider
	// cleanup removes zips packed from unpacked-layout directories.
	cleanup []string
}

// Close removes temporary files made while reading.
func (m *Release) Close() {
	for _, f := range m.cleanup {
		os.Remove(f)
	}
}

// Read reads a directory written by `tofu providers mirror` or `terraform
// providers mirror` (packed layout: HOST/NS/TYPE/<version>.json with the
// zips beside it) and verifies every zip against the hashes its
// version.json records. Provider versions in the unpacked layout
// (HOST/NS/TYPE/VERSION/OS_ARCH/…) are packed into deterministic zips;
// their h1 is that of the files, but their zh is new.
func Read(ctx context.Context, dir string) ([]*Release, error) {
	typeDirs, err := filepath.Glob(filepath.Join(dir, "*", "*", "*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(typeDirs)
	var out []*Release
	for _, td := range typeDirs {
		rs, err := readTypeDir(ctx, dir, td)
		out = append(out, rs...)
		if err != nil {
			closeAll(out)
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no provider mirror (HOST/NAMESPACE/TYPE/<version>.json)", dir)
	}
	return out, nil
}

func closeAll(rs []*Release) {
	for _, r := range rs {
		r.Close()
	}
}

// readTypeDir reads every version of one provider, HOST/NS/TYPE.
func readTypeDir(ctx context.Context, root, td string) ([]*Release, error) {
	if st, err := os.Stat(td); err != nil || !st.IsDir() {
		return nil, nil
	}
	rel, _ := filepath.Rel(root, td)
	addr, err := names.ParseProvider(filepath.ToSlash(rel))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", td, err)
	}
	entries, err := os.ReadDir(td)
	if err != nil {
		return nil, err
	}
	var out []*Release
	for _, e := range entries {
		r, err := readEntry(ctx, td, addr, e)
		if r != nil {
			out = append(out, r)
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// readEntry reads a packed version (<version>.json) or an unpacked one
// (<version>/), preferring the packed form when both are there.
func readEntry(ctx context.Context, td string, addr names.Provider, e os.DirEntry) (*Release, error) {
	name := e.Name()
	switch {
	case !e.IsDir() && strings.HasSuffix(name, ".json") && name != "index.json":
		return readPackedVersion(ctx, td, addr, strings.TrimSuffix(name, ".json"))
	case e.IsDir():
		if _, err := names.ParseVersion(name); err != nil {
			return nil, nil
		}
		if _, err := os.Stat(filepath.Join(td, name+".json")); err == nil {
			return nil, nil
		}
		return readUnpackedVersion(ctx, filepath.Join(td, name), addr, name)
	}
	return nil, nil
}

func readPackedVersion(ctx context.Context, typeDir string, addr names.Provider, version string) (*Release, error) {
	jsonPath := filepath.Join(typeDir, version+".json")
	if _, err := names.ParseVersion(version); err != nil {
		return nil, fmt.Errorf("%s: %w", jsonPath, err)
	}
	data, err := localfile.ReadBoundedContext(ctx, jsonPath, oci.MaxDocument)
	if err != nil {
		return nil, err
	}
	var doc wire.MirrorVersion
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", jsonPath, err)
	}
	if len(doc.Archives) == 0 {
		return nil, fmt.Errorf("%s lists no archives", jsonPath)
	}
	rel := &release.Provider{Type: addr.Type, Version: version}
	for key, a := range doc.Archives {
		pkg, err := readArchive(ctx, typeDir, key, a)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", jsonPath, key, err)
		}
		rel.Packages = append(rel.Packages, pkg)
	}
	slices.SortFunc(rel.Packages, func(a, b release.Package) int { return names.ComparePlatforms(a.Platform, b.Platform) })
	return &Release{Provider: addr, Release: rel}, nil
}

// readArchive reads one archive a version.json names, checked against the
// hashes recorded for it.
func readArchive(ctx context.Context, typeDir, key string, a wire.MirrorArchive) (release.Package, error) {
	p, err := names.ParsePlatform(key)
	if err != nil {
		return release.Package{}, err
	}
	name, err := localArchiveName(a.URL)
	if err != nil {
		return release.Package{}, err
	}
	path := filepath.Join(typeDir, name)
	sum, size, err := release.HashPackageFile(ctx, path)
	if err != nil {
		return release.Package{}, err
	}
	h1, err := matchRecorded(ctx, path, sum, a.Hashes)
	if err != nil {
		return release.Package{}, fmt.Errorf("%s: %w", name, err)
	}
	return release.Package{Platform: p, Path: path, Filename: name, SHA256: sum, Size: size, H1: h1}, nil
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
// archive hash older tools wrote; at least one must be there. It returns
// the zip's h1 when it computed it.
func matchRecorded(ctx context.Context, path, sum string, hashes []string) (string, error) {
	if len(hashes) == 0 {
		return "", errors.New("version.json records no hash for it: nothing to verify against")
	}
	var h1, legacy string
	matched := false
	for _, h := range hashes {
		var err error
		switch {
		case strings.HasPrefix(h, "zh:"):
			if h != pkghash.ZH(sum) {
				return "", fmt.Errorf("sha256 %s does not match the recorded %s", sum, h)
			}
			matched = true
		case strings.HasPrefix(h, "h1:"):
			if h1 == "" {
				if h1, err = pkghash.ZipFileH1Context(ctx, path); err != nil {
					return "", err
				}
			}
			if h != h1 && legacy == "" {
				if legacy, err = dirhash.HashZip(path, dirhash.Hash1); err != nil {
					return "", err
				}
			}
			if h != h1 && h != legacy {
				return "", fmt.Errorf("h1 %s does not match the recorded %s", h1, h)
			}
			matched = true
		}
	}
	if !matched {
		return "", fmt.Errorf("version.json records no h1 or zh hash for it (%v)", hashes)
	}
	return h1, nil
}

// readUnpackedVersion packs each HOST/NS/TYPE/VERSION/OS_ARCH directory
// into a deterministic zip named as the release's package.
func readUnpackedVersion(ctx context.Context, versionDir string, addr names.Provider, version string) (*Release, error) {
	entries, err := os.ReadDir(versionDir)
	if err != nil {
		return nil, err
	}
	r := &Release{Provider: addr, Release: &release.Provider{Type: addr.Type, Version: version}}
	for _, e := range entries {
		p, err := names.ParsePlatform(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		z, err := modulepkg.Pack(ctx, filepath.Join(versionDir, e.Name()), modulepkg.Options{AllowNoRoot: true})
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("%s: %w", filepath.Join(versionDir, e.Name()), err)
		}
		r.cleanup = append(r.cleanup, z.Path)
		r.Release.Packages = append(r.Release.Packages, release.Package{
			Platform: p, Path: z.Path, SHA256: z.Digest.Encoded(), Size: z.Size,
			Filename: names.ProviderZipName(addr.Type, version, p),
		})
	}
	if len(r.Release.Packages) == 0 {
		return nil, fmt.Errorf("%s holds no os_arch directories", versionDir)
	}
	return r, nil
}

// Close closes what Read opened.
func Close(releases []*Release) {
	for _, r := range releases {
		r.Close()
	}
}

// Targets are the repositories tpl gives the releases, each checked to
// serve its release's type.
func Targets(tpl *repotemplate.Template, releases []*Release) ([]oci.Reference, error) {
	refs := make([]oci.Reference, len(releases))
	for i, r := range releases {
		var err error
		if refs[i], err = tpl.Expand(r.Provider.TemplateValues()); err != nil {
			return nil, fmt.Errorf("%s: %w", r.Provider, err)
		}
		if err := r.Release.CheckServedAs(r.Provider.Type); err != nil {
			return nil, fmt.Errorf("%s: %w", r.Provider, err)
		}
	}
	return refs, nil
}

// Summary says what `push mirror` did: the versions it pushed
// (imported), and those the registry already held (upToDate).
func Summary(imported, upToDate int) string {
	switch {
	case upToDate == 0:
		return "imported " + names.Plural(imported, "provider version")
	case imported == 0:
		return names.Plural(upToDate, "provider version") + " already up to date; nothing imported"
	}
	return fmt.Sprintf("imported %s; %d already up to date", names.Plural(imported, "provider version"), upToDate)
}
