package ingest

import (
	"context"
	"fmt"
	"strings"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/apparentlymart/go-versions/versions/constraints"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// TofuOptions configure Tofu.
type TofuOptions struct {
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
	// Attest, when set, signs and attests each release pushed; a release
	// held already that its key has not attested is downloaded and
	// verified again (pushed: up to date) and then attested.
	Attest *Attestation
	// Gate, when set, is asked about each version before anything of it
	// is downloaded (gate.go).
	Gate Gate
}

// Tofu copies OpenTofu releases from a TofuDL-compatible API into an
// OCI repository: the versions chosen, their files downloaded, verified as
// `push tofu` verifies them (signature with the given keys, every file
// against SHA256SUMS), and pushed one artifact per version. Versions whose
// tag already holds the same release are reported as skipped.
func Tofu(ctx context.Context, c *origin.Client, opts TofuOptions) []Result {
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
	o, err := NewTofuOrigin(opts.APIURL, opts.DownloadTemplate, opts.Keys, opts.Platforms, opts.MaxFileSize)
	if err != nil {
		return fail(err)
	}
	files, available, err := o.Versions(ctx, c)
	if err != nil {
		return fail(err)
	}
	chosen, results := chooseTofu(available, opts)
	if len(chosen) == 0 && len(results) == 0 {
		return fail(fmt.Errorf("%s lists no matching version", o.API.Redacted()))
	}
	for _, v := range chosen {
		r := Result{Provider: "opentofu", Version: v.String(), Warnings: opts.Gate.warnings(names.KindTofu, policy.TofuAddress, v)}
		res, attested, err := ingestTofuVersion(ctx, c, o, v, files[v.String()], opts)
		if err != nil {
			r.Error = err.Error()
			opts.Log("opentofu %s: %v", v, err)
		} else {
			r.Reference = opts.RepoRef.WithReference(names.TagForVersion(v)).String()
			r.Digest, r.Skipped, r.Attested = res.Root.Digest.String(), res.UpToDate, attested
			opts.Log("opentofu %s → %s", v, res.Root.Digest)
		}
		results = append(results, r)
	}
	return results
}

// ingestTofuVersion takes one release: the signed SHA256SUMS first (if the
// repository already holds exactly these files, nothing else is
// downloaded, unless it is to be attested and is not yet), then the
// files, then the push and, with opts.Attest, the attestation.
func ingestTofuVersion(ctx context.Context, c *origin.Client, o *TofuOrigin, v versions.Version, listed []string, opts TofuOptions) (oci.PushResult, bool, error) {
	rel, err := o.Resolve(ctx, c, v, listed)
	if err != nil {
		return oci.PushResult{}, false, err
	}
	if done, ok := rel.HeldIn(ctx, opts.Repo); ok && (opts.Attest == nil || opts.Attest.Attested(ctx, opts.Repo, done.Digest, release.TofuPredicateType)) {
		return oci.PushResult{Root: done, UpToDate: true}, false, nil
	}
	res, err := stageAndPush(ctx, opts.Concurrency, stagedRelease[string]{
		writeChecksums: rel.WriteChecksums,
		files:          rel.Downloads(),
		fetch: func(ctx context.Context, f, dir string) error {
			return rel.Download(ctx, c, f, dir)
		},
		push: func(dir string) (oci.PushResult, error) {
			_, res, err := o.PushDirAttested(ctx, dir, opts.Repo, opts.RepoRef.Name(), oci.PushOptions{}, opts.Attest)
			return res, err
		},
	})
	return res, err == nil && opts.Attest != nil, err
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
