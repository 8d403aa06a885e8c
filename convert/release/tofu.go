package release

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/opentofu/tofudl/branding"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// OpenTofuSigningKey is OpenTofu's release signing key (fingerprint
// E3E6E43D84CB852EADB0051D0C0AF313E5FD9F80), as bundled with tofudl, the
// reference TofuDL client.
func OpenTofuSigningKey() (*pgp.Keyring, error) {
	return pgp.ReadKeyring("OpenTofu release signing key "+branding.GPGKeyFingerprint, []byte(branding.DefaultGPGKey))
}

// Tofu is a verified OpenTofu release directory.
type Tofu struct {
	Version string
	Files   []TofuFile
	KeyID   string
	// KeyFingerprint is the full fingerprint (upper-case hex) of the
	// primary key whose id is KeyID.
	KeyFingerprint string
}

// TofuFile is one verified file of a release.
type TofuFile struct {
	Name, Path, SHA256 string
	Size               int64
	// Data holds a file read and verified in memory (SHA256SUMS and its
	// .gpgsig): those bytes, not the file read again, are what is pushed.
	Data []byte
}

// ReadTofu reads and verifies an OpenTofu release directory:
// tofu_<v>_SHA256SUMS signed by tofu_<v>_SHA256SUMS.gpgsig (binary
// detached signature) with one of keys, and every other file listed there
// with a matching digest. Signature files of SHA256SUMS itself (.gpgsig,
// cosign's .sig and .pem) are kept unverified. Nothing else is accepted.
//
// The rules are those of the TofuDL client (github.com/opentofu/tofudl),
// which installs these releases: pgp.VerifyTofuDL (no grace for expired
// keys, binary signatures only) and sha256sums.TofuDLDigests (every line
// naming a file must give its exact lower-case digest).
func ReadTofu(ctx context.Context, dir string, keys []*pgp.Keyring) (*Tofu, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	version, err := tofuReleaseVersion(dir, entries)
	if err != nil {
		return nil, err
	}
	sumsName := names.TofuSHA256SUMSName(version)
	sums, sig, v, err := readSignedTofuSums(ctx, dir, sumsName, keys)
	if err != nil {
		return nil, err
	}
	rel := &Tofu{Version: version, KeyID: v.KeyID, KeyFingerprint: primaryFingerprint(v.Keyring, v.KeyID)}
	listed, err := rel.collectFiles(dir, entries, sumsName, map[string][]byte{sumsName: sums, sumsName + ".gpgsig": sig})
	if err != nil {
		return nil, err
	}
	if err := rel.checkFiles(ctx, sumsName, listed); err != nil {
		return nil, err
	}
	sort.Slice(rel.Files, func(i, j int) bool { return rel.Files[i].Name < rel.Files[j].Name })
	return rel, nil
}

// tofuReleaseVersion is the one version whose tofu_<v>_SHA256SUMS the
// directory holds.
func tofuReleaseVersion(dir string, entries []os.DirEntry) (string, error) {
	var version string
	for _, e := range entries {
		if v, ok := strings.CutSuffix(e.Name(), "_SHA256SUMS"); ok && strings.HasPrefix(v, "tofu_") {
			if version != "" {
				return "", fmt.Errorf("%s holds more than one release (%s and %s): push one version at a time", dir, version, v[5:])
			}
			version = v[5:]
		}
	}
	if version == "" {
		return "", fmt.Errorf("%s has no tofu_<version>_SHA256SUMS", dir)
	}
	if _, err := names.ParseVersion(version); err != nil {
		return "", fmt.Errorf("tofu_%s_SHA256SUMS: %w", version, err)
	}
	return version, nil
}

// readSignedTofuSums reads SHA256SUMS and verifies its .gpgsig as the
// TofuDL client does, returning both files and what verified it.
func readSignedTofuSums(ctx context.Context, dir, sumsName string, keys []*pgp.Keyring) (sums, sig []byte, v *pgp.Verified, err error) {
	sums, err = localfile.ReadBoundedContext(ctx, filepath.Join(dir, sumsName), oci.MaxSmallFile)
	if err != nil {
		return nil, nil, nil, err
	}
	sig, err = localfile.ReadBoundedContext(ctx, filepath.Join(dir, sumsName+".gpgsig"), oci.MaxSmallFile)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the release must be signed: %w", err)
	}
	v, err = pgp.VerifyTofuDL(sums, sig, keys)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s.gpgsig: %w", sumsName, err)
	}
	return sums, sig, v, nil
}

// collectFiles takes every file of the directory: SHA256SUMS and its
// signatures, and files SHA256SUMS lists (returned with their listed
// digests); anything else is refused. verified holds the files already
// read and verified (SHA256SUMS and its .gpgsig), by name.
func (rel *Tofu) collectFiles(dir string, entries []os.DirEntry, sumsName string, verified map[string][]byte) (map[string][]string, error) {
	sums := verified[sumsName]
	listed := map[string][]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !e.Type().IsRegular() {
			return nil, fmt.Errorf("%s: only regular files belong in a release directory", name)
		}
		switch digests := sha256sums.TofuDLDigests(sums, name); {
		case name == sumsName || strings.HasPrefix(name, sumsName+"."):
			// SHA256SUMS and its signatures: verified above or not ours to check.
		case len(digests) > 0:
			listed[name] = digests
		case strings.HasPrefix(name, "tofu_"):
			return nil, fmt.Errorf("%s: not listed in %s as the TofuDL client reads it, so it cannot be verified%s", name, sumsName, tofuDLListingHint(sums, name))
		default:
			return nil, fmt.Errorf("%s: not part of OpenTofu release %s", name, rel.Version)
		}
		rel.Files = append(rel.Files, TofuFile{Name: name, Path: filepath.Join(dir, name), Data: verified[name]})
	}
	if len(listed) == 0 {
		return nil, fmt.Errorf("%s holds none of the files %s lists", dir, sumsName)
	}
	return listed, nil
}

// checkFiles hashes every file, in parallel, and compares the listed ones
// with their digests as the TofuDL client compares them.
func (rel *Tofu) checkFiles(ctx context.Context, sumsName string, listed map[string][]string) error {
	var g errgroup.Group
	g.SetLimit(runtime.NumCPU())
	for i := range rel.Files {
		f := &rel.Files[i]
		g.Go(func() error {
			if f.Data != nil {
				f.SHA256, f.Size = digest.FromBytes(f.Data).Encoded(), int64(len(f.Data))
				return nil
			}
			var err error
			if f.SHA256, f.Size, err = HashPackageFile(ctx, f.Path); err != nil {
				return err
			}
			for _, want := range listed[f.Name] {
				if want != f.SHA256 {
					return fmt.Errorf("%s: sha256 %s does not match %s (%q), as the TofuDL client compares them: the file was altered, the wrong file, or the digest is not written in lower-case hex", f.Name, f.SHA256, sumsName, want)
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// Artifact builds the release artifact: every file a layer titled with its
// name, the file list in the config.
func (r *Tofu) Artifact() (*oci.Artifact, error) {
	sumsName := names.TofuSHA256SUMSName(r.Version)
	blobs := make([]oci.Blob, len(r.Files))
	for i, f := range r.Files {
		mt := oci.MediaTypeReleaseFile
		switch f.Name {
		case sumsName:
			mt = oci.MediaTypeSHA256SUMS
		case sumsName + ".gpgsig":
			mt = oci.MediaTypePGPSignature
		}
		if f.Data != nil {
			blobs[i] = oci.BytesBlob(mt, f.Data, map[string]string{oci.AnnotationTitle: f.Name})
			continue
		}
		path := f.Path
		blobs[i] = oci.Blob{
			Descriptor: ocispec.Descriptor{
				MediaType:   mt,
				Digest:      digest.NewDigestFromEncoded(digest.SHA256, f.SHA256),
				Size:        f.Size,
				Annotations: map[string]string{oci.AnnotationTitle: f.Name},
			},
			Open: func() (io.ReadCloser, error) { return localfile.OpenRegular(path) },
		}
	}
	return oci.BuildTofuRelease(r.Version, blobs)
}

// Push pushes a verified release under its version tag and the also tags
// (pointers such as latest), tags last, following the one rule for
// version tags (oci.Tags.CheckVersions; opts.Replace overrides it); an
// identical release already there is reported up to date.
func (r *Tofu) Push(ctx context.Context, repo oci.Repository, opts oci.PushOptions, also ...string) (oci.PushResult, error) {
	_, tags, err := releaseTags(ctx, repo, r.Version, also)
	if err != nil {
		return oci.PushResult{}, err
	}
	a, err := r.Artifact()
	if err != nil {
		return oci.PushResult{}, err
	}
	return oci.Push(ctx, repo, a, tags, opts)
}

// tofuDLListingHint explains a name that SHA256SUMS mentions in a form the
// TofuDL client does not read.
func tofuDLListingHint(sums []byte, name string) string {
	if !strings.Contains(string(sums), name) {
		return ""
	}
	return fmt.Sprintf(" (a line mentions it, but the client reads only \"<sha256>  %s\" lines: two spaces, no '*' or tab)", name)
}
