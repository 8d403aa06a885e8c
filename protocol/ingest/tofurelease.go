package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/opentofu/tofudl/branding"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// TofuOrigin is a TofuDL API with its download location and the keys its
// releases must be signed with: where `oci-tofu mirror --tofu-repository`
// and the proxy's TofuDL pull-through take OpenTofu releases from.
type TofuOrigin struct {
	API      *url.URL
	download *template.Template
	Keys     []*pgp.Keyring
	// Platforms, when set, limits a release's files to those of these
	// platforms (tofu_<v>_<os>_<arch>.*), plus SHA256SUMS and its signatures.
	Platforms   []names.Platform
	MaxFileSize int64
}

// NewTofuOrigin checks the API URL (default: OpenTofu's) and the download
// URL template (default: OpenTofu's GitHub releases), a Go template with
// {{ .Version }} and {{ .Artifact }}.
func NewTofuOrigin(apiURL, downloadTemplate string, keys []*pgp.Keyring, platforms []names.Platform, maxFileSize int64) (*TofuOrigin, error) {
	if apiURL == "" {
		apiURL = branding.DefaultDownloadAPIURL
	}
	if downloadTemplate == "" {
		downloadTemplate = branding.DefaultMirrorURLTemplate
	}
	if maxFileSize <= 0 {
		maxFileSize = 1 << 30
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no key to verify OpenTofu releases with")
	}
	tpl, err := template.New("download").Option("missingkey=error").Parse(downloadTemplate)
	if err != nil {
		return nil, fmt.Errorf("download URL template: %w", err)
	}
	api, err := url.Parse(apiURL)
	if err != nil || api.Scheme != "https" || api.Host == "" || api.User != nil {
		return nil, fmt.Errorf("invalid API URL %q: an https URL without credentials", apiURL)
	}
	o := &TofuOrigin{API: api, download: tpl, Keys: keys, Platforms: platforms, MaxFileSize: maxFileSize}
	if _, err := o.downloadHost(); err != nil {
		return nil, err
	}
	return o, nil
}

// Hosts are the hosts the origin is configured with: the API's and the
// download URL template's (a template naming its host with {{ }} gives the
// host it names for version 0.0.0).
func (o *TofuOrigin) Hosts() []string {
	h, _ := o.downloadHost() // checked by NewTofuOrigin
	return []string{o.API.Host, h}
}

// downloadHost is the host of the download URL template's URLs.
func (o *TofuOrigin) downloadHost() (string, error) {
	u, err := o.downloadURL("0.0.0", "tofu_0.0.0_SHA256SUMS")
	if err != nil {
		return "", fmt.Errorf("download URL template: %w", err)
	}
	return u.Host, nil
}

// downloadURL expands the download URL template; the URL must be https,
// without credentials.
func (o *TofuOrigin) downloadURL(version, artifact string) (*url.URL, error) {
	var b bytes.Buffer
	if err := o.download.Execute(&b, struct{ Version, Artifact string }{version, artifact}); err != nil {
		return nil, err
	}
	u, err := url.Parse(b.String())
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("download URL %q is not an https URL without credentials", b.String())
	}
	return u, nil
}

// Versions reads the origin's api.json: the files each version lists, by
// canonical version, and the versions.
func (o *TofuOrigin) Versions(ctx context.Context, c *origin.Client) (map[string][]string, versions.List, error) {
	doc, err := c.TofuAPI(ctx, o.API)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", o.API.Redacted(), err)
	}
	files := map[string][]string{}
	var available versions.List
	for _, v := range doc.Versions {
		pv, err := names.ParseVersion(v.ID)
		if err != nil {
			continue
		}
		if _, dup := files[pv.String()]; !dup {
			available = append(available, pv)
		}
		files[pv.String()] = v.Files
	}
	return files, available, nil
}

// TofuOriginRelease is one OpenTofu release as a TofuDL origin offers it,
// its SHA256SUMS signature already verified with the origin's keys.
type TofuOriginRelease struct {
	Version string
	// Files are the files to take (sorted): those listed for the
	// platforms chosen, SHA256SUMS and its signature always.
	Files                 []string
	SHA256SUMS, Signature []byte
	KeyID                 string
	origin                *TofuOrigin
}

// Resolve picks the files of version v to take from those api.json lists,
// then fetches SHA256SUMS and its .gpgsig and verifies them (convert/pgp,
// as `push tofu` does), before any other file is downloaded.
func (o *TofuOrigin) Resolve(ctx context.Context, c *origin.Client, v versions.Version, listed []string) (*TofuOriginRelease, error) {
	rel := &TofuOriginRelease{Version: v.String(), origin: o}
	for _, f := range listed {
		if f == "" || strings.ContainsAny(f, "/\\") || f == "." || f == ".." {
			return nil, fmt.Errorf("api.json lists an unsafe file name %q", f)
		}
	}
	rel.Files = o.WantedFiles(v, listed)
	sums := rel.SumsName()
	for _, f := range []struct {
		name string
		out  *[]byte
	}{{sums, &rel.SHA256SUMS}, {sums + ".gpgsig", &rel.Signature}} {
		var b bytes.Buffer
		if err := rel.fetch(ctx, c, f.name, &b, oci.MaxSmallFile); err != nil {
			return nil, err
		}
		*f.out = b.Bytes()
	}
	ver, err := pgp.VerifyTofuDL(rel.SHA256SUMS, rel.Signature, o.Keys)
	if err != nil {
		return nil, verificationError("%s.gpgsig: %v", sums, err)
	}
	rel.KeyID = ver.KeyID
	return rel, nil
}

// WantedFiles are the files of version v to take, of those api.json
// lists: SHA256SUMS and its .gpgsig always, SHA256SUMS's other signatures,
// and the files of the platforms chosen (all when none were); sorted.
func (o *TofuOrigin) WantedFiles(v versions.Version, listed []string) []string {
	sums := names.TofuSHA256SUMSName(v.String())
	want := []string{sums, sums + ".gpgsig"}
	for _, f := range listed {
		if f != "" && !strings.ContainsAny(f, "/\\") && (strings.HasPrefix(f, sums) || tofuFileWanted(f, v, o.Platforms)) {
			want = append(want, f)
		}
	}
	slices.Sort(want)
	return slices.Compact(want)
}

// SumsName is the release's SHA256SUMS file name.
func (rel *TofuOriginRelease) SumsName() string { return names.TofuSHA256SUMSName(rel.Version) }

// SignatureName is the name of SHA256SUMS's signature.
func (rel *TofuOriginRelease) SignatureName() string { return rel.SumsName() + ".gpgsig" }

// Downloads are the release's files other than SHA256SUMS and its
// signature (which resolving the release read already).
func (rel *TofuOriginRelease) Downloads() []string {
	var files []string
	for _, f := range rel.Files {
		if f != rel.SumsName() && f != rel.SignatureName() {
			files = append(files, f)
		}
	}
	return files
}

// Has reports whether name is one of the files to take.
func (rel *TofuOriginRelease) Has(name string) bool {
	_, ok := slices.BinarySearch(rel.Files, name)
	return ok
}

// SHA256 is the digest a file must have, as the TofuDL client reads
// SHA256SUMS (sha256sums.TofuDLDigests, the rule `push tofu` applies): ""
// for files it does not list (SHA256SUMS itself and its signatures, which
// `push tofu` keeps unverified), a value no file matches when its lines
// disagree.
func (rel *TofuOriginRelease) SHA256(name string) string {
	ds := sha256sums.TofuDLDigests(rel.SHA256SUMS, name)
	if len(ds) == 0 {
		return ""
	}
	for _, d := range ds[1:] {
		if d != ds[0] {
			return "conflicting digests in SHA256SUMS"
		}
	}
	return ds[0]
}

// URL is where a file of the release is downloaded from.
func (rel *TofuOriginRelease) URL(name string) (*url.URL, error) {
	return rel.origin.downloadURL(rel.Version, name)
}

// Open starts downloading a file of the release.
func (rel *TofuOriginRelease) Open(ctx context.Context, c *origin.Client, name string) (*origin.Body, error) {
	u, err := rel.URL(name)
	if err != nil {
		return nil, err
	}
	return c.Open(ctx, u, u.Host, rel.origin.MaxFileSize)
}

func (rel *TofuOriginRelease) fetch(ctx context.Context, c *origin.Client, name string, w io.Writer, max int64) error {
	u, err := rel.URL(name)
	if err != nil {
		return err
	}
	return c.FetchFile(ctx, u, u.Host, max, w)
}

// WriteChecksums writes SHA256SUMS and its .gpgsig into a release
// directory.
func (rel *TofuOriginRelease) WriteChecksums(dir string) error {
	if err := os.WriteFile(filepath.Join(dir, rel.SumsName()), rel.SHA256SUMS, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, rel.SignatureName()), rel.Signature, 0o600)
}

// Download downloads one file into dir, checking it against SHA256SUMS
// when listed there.
func (rel *TofuOriginRelease) Download(ctx context.Context, c *origin.Client, name, dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	err = rel.fetch(ctx, c, name, io.MultiWriter(f, h), rel.origin.MaxFileSize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if want, got := rel.SHA256(name), hex.EncodeToString(h.Sum(nil)); want != "" && got != want {
		return verificationError("%s: sha256 %s does not match %s (%s)", name, got, rel.SumsName(), want)
	}
	return nil
}

// PushDir reads the release directory with convert/release, verifying it
// again as `push tofu` does, and pushes it under its version tag.
func (o *TofuOrigin) PushDir(ctx context.Context, dir string, repo oci.Repository, opts oci.PushOptions) (*release.Tofu, oci.PushResult, error) {
	r, err := release.ReadTofu(ctx, dir, o.Keys)
	if err != nil {
		return nil, oci.PushResult{}, err
	}
	res, err := r.Push(ctx, repo, opts)
	return r, res, err
}

// PushDirAttested is PushDir with att's attestation of the release, in
// repo (named repository), written before its tag (see
// Attestation.push); a nil att attests nothing.
func (o *TofuOrigin) PushDirAttested(ctx context.Context, dir string, repo oci.Repository, repository string, opts oci.PushOptions, att *Attestation) (*release.Tofu, oci.PushResult, error) {
	r, err := release.ReadTofu(ctx, dir, o.Keys)
	if err != nil {
		return nil, oci.PushResult{}, err
	}
	res, err := att.push(ctx, repo, r, opts, func(ctx context.Context, root ocispec.Descriptor) error {
		return att.Tofu(ctx, repo, repository, r, root)
	})
	return r, res, err
}

// HeldIn reports whether repo's tag for the version holds exactly the
// files to take with the digests the verified SHA256SUMS lists.
func (rel *TofuOriginRelease) HeldIn(ctx context.Context, repo oci.ReadOnlyRepository) (ocispec.Descriptor, bool) {
	v, err := names.ParseVersion(rel.Version)
	if err != nil {
		return ocispec.Descriptor{}, false
	}
	desc, err := repo.Resolve(ctx, names.TagForVersion(v))
	if err != nil {
		return ocispec.Descriptor{}, false
	}
	cfg, _, err := oci.ReadTofuRelease(ctx, repo, desc)
	if err != nil || len(cfg.Files) != len(rel.Files) {
		return ocispec.Descriptor{}, false
	}
	held := map[string]string{}
	for _, f := range cfg.Files {
		held[f.Name] = f.SHA256
	}
	for _, f := range rel.Files {
		want := rel.SHA256(f)
		switch f {
		case rel.SumsName():
			want = digest.FromBytes(rel.SHA256SUMS).Encoded()
		case rel.SignatureName():
			want = digest.FromBytes(rel.Signature).Encoded()
		}
		if sum, ok := held[f]; !ok || (want != "" && want != sum) {
			return ocispec.Descriptor{}, false
		}
	}
	return desc, true
}
