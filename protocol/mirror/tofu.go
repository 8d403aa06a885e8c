package mirror

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/apparentlymart/go-versions/versions/constraints"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/opentofu/tofudl/branding"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// TofuMirrorOptions configure MirrorTofu.
type TofuMirrorOptions struct {
	// APIURL is a TofuDL api.json (default: OpenTofu's).
	APIURL string
	// DownloadTemplate is a Go template with {{ .Version }} and
	// {{ .Artifact }} (default: OpenTofu's GitHub releases).
	DownloadTemplate string
	// Versions to take; empty means the newest stable version only.
	Versions constraints.IntersectionSpec
	// Keys the SHA256SUMS signature must verify against.
	Keys []*pgp.Keyring
	// Platforms, when set, limits the files to those of these platforms
	// (tofu_<v>_<os>_<arch>.*), plus SHA256SUMS and its signatures.
	Platforms []names.Platform
	Repo      oci.Repository
	// RepoRef names Repo in results.
	RepoRef oci.Reference
	// Concurrency bounds parallel downloads (default 4).
	Concurrency int
	MaxFileSize int64
	Log         func(format string, args ...any)
}

// MirrorTofu copies OpenTofu releases from a TofuDL-compatible API into an
// OCI repository: the versions chosen, their files downloaded, verified as
// `push tofu` verifies them (signature with the given keys, every file
// against SHA256SUMS), and pushed one artifact per version. Versions whose
// tag already holds the same release are reported as skipped.
func MirrorTofu(ctx context.Context, c *origin.Client, opts TofuMirrorOptions) []Result {
	if opts.APIURL == "" {
		opts.APIURL = branding.DefaultDownloadAPIURL
	}
	if opts.DownloadTemplate == "" {
		opts.DownloadTemplate = branding.DefaultMirrorURLTemplate
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = oci.MaxPackageSize
	}
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	fail := func(err error) []Result { return []Result{{Provider: "opentofu", Error: err.Error()}} }
	tpl, err := template.New("download").Option("missingkey=error").Parse(opts.DownloadTemplate)
	if err != nil {
		return fail(fmt.Errorf("download URL template: %w", err))
	}
	api, err := url.Parse(opts.APIURL)
	if err != nil || (api.Scheme != "https" && api.Scheme != "http") {
		return fail(fmt.Errorf("invalid API URL %q", opts.APIURL))
	}
	doc, err := c.TofuAPI(ctx, api)
	if err != nil {
		return fail(fmt.Errorf("reading %s: %w", api.Redacted(), err))
	}
	files := map[string][]string{}
	var available versions.List
	for _, v := range doc.Versions {
		pv, err := names.ParseVersion(v.ID)
		if err != nil {
			continue
		}
		files[pv.String()] = v.Files
		available = append(available, pv)
	}
	var chosen versions.List
	if len(opts.Versions) > 0 {
		chosen = names.MatchingVersions(available, opts.Versions)
	} else if newest := available.NewestInSet(versions.Released); newest != versions.Unspecified {
		chosen = versions.List{newest}
	}
	if len(chosen) == 0 {
		return fail(fmt.Errorf("%s lists no matching version", api.Redacted()))
	}
	var results []Result
	for _, v := range chosen {
		r := Result{Provider: "opentofu", Version: v.String()}
		res, err := mirrorTofuVersion(ctx, c, tpl, v, files[v.String()], opts)
		if err != nil {
			r.Error = err.Error()
			opts.Log("opentofu %s: %v", v, err)
		} else {
			r.Reference = opts.RepoRef.WithReference(names.TagForVersion(v)).String()
			r.Digest, r.Skipped = res.Root.Digest.String(), res.UpToDate
			opts.Log("opentofu %s → %s", v, res.Root.Digest)
		}
		results = append(results, r)
	}
	return results
}

func mirrorTofuVersion(ctx context.Context, c *origin.Client, tpl *template.Template, v versions.Version, listed []string, opts TofuMirrorOptions) (oci.PushResult, error) {
	sums := "tofu_" + v.String() + "_SHA256SUMS"
	var want []string
	for _, f := range listed {
		if f == "" || strings.ContainsAny(f, "/\\") || f == "." || f == ".." {
			return oci.PushResult{}, fmt.Errorf("api.json lists an unsafe file name %q", f)
		}
		if strings.HasPrefix(f, sums) || tofuFileWanted(f, v, opts.Platforms) {
			want = append(want, f)
		}
	}
	dir, err := os.MkdirTemp("", "oci-tofu-tofu-")
	if err != nil {
		return oci.PushResult{}, err
	}
	defer os.RemoveAll(dir)
	fetch := func(ctx context.Context, f string) error {
		var b bytes.Buffer
		if err := tpl.Execute(&b, struct{ Version, Artifact string }{v.String(), f}); err != nil {
			return err
		}
		u, err := url.Parse(b.String())
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
			return fmt.Errorf("download URL %q is not http(s)", b.String())
		}
		return c.FetchTo(ctx, u, u.Host, opts.MaxFileSize, filepath.Join(dir, f), "")
	}
	// The signed SHA256SUMS first: if the repository already holds exactly
	// these files, nothing else is downloaded.
	for _, f := range []string{sums, sums + ".gpgsig"} {
		if err := fetch(ctx, f); err != nil {
			return oci.PushResult{}, err
		}
	}
	if done, ok := tofuReleaseHeld(ctx, dir, sums, v, want, opts); ok {
		return oci.PushResult{Root: done, UpToDate: true}, nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for _, f := range want {
		if f == sums || f == sums+".gpgsig" {
			continue
		}
		g.Go(func() error { return fetch(gctx, f) })
	}
	if err := g.Wait(); err != nil {
		return oci.PushResult{}, err
	}
	rel, err := release.ReadTofu(ctx, dir, opts.Keys)
	if err != nil {
		return oci.PushResult{}, err
	}
	return rel.Push(ctx, opts.Repo, false, oci.PushOptions{})
}

// tofuFileWanted selects a release file for the platforms asked for (all
// files when none were).
func tofuFileWanted(name string, v versions.Version, platforms []names.Platform) bool {
	if len(platforms) == 0 {
		return true
	}
	for _, p := range platforms {
		if strings.HasPrefix(name, "tofu_"+v.String()+"_"+p.String()+".") {
			return true
		}
	}
	return false
}

// tofuReleaseHeld reports whether the version's tag holds exactly the
// wanted files with the digests the (verified) SHA256SUMS lists.
func tofuReleaseHeld(ctx context.Context, dir, sums string, v versions.Version, want []string, opts TofuMirrorOptions) (ocispec.Descriptor, bool) {
	data, err := os.ReadFile(filepath.Join(dir, sums))
	if err != nil {
		return ocispec.Descriptor{}, false
	}
	sig, err := os.ReadFile(filepath.Join(dir, sums+".gpgsig"))
	if err != nil {
		return ocispec.Descriptor{}, false
	}
	if _, err := pgp.VerifyDetached(data, sig, opts.Keys); err != nil {
		return ocispec.Descriptor{}, false
	}
	listed, err := sha256sums.Parse(data)
	if err != nil {
		return ocispec.Descriptor{}, false
	}
	desc, err := opts.Repo.Resolve(ctx, names.TagForVersion(v))
	if err != nil {
		return ocispec.Descriptor{}, false
	}
	cfg, _, err := oci.ReadTofuRelease(ctx, opts.Repo, desc)
	if err != nil || len(cfg.Files) != len(want) {
		return ocispec.Descriptor{}, false
	}
	held := map[string]string{}
	for _, f := range cfg.Files {
		held[f.Name] = f.SHA256
	}
	for _, f := range want {
		sum, ok := held[f]
		if !ok || (listed[f] != "" && listed[f] != sum) {
			return ocispec.Descriptor{}, false
		}
	}
	return desc, true
}
