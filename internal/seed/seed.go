// Package seed fills registries with many provider versions quickly, for
// benchmarks and scale tests: signed releases, pushed with the code `oci-tofu
// push provider` runs, several versions at a time, their zips shared
// between versions so that each blob is uploaded once.
package seed

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Platforms are the four platforms most providers ship for.
var Platforms = []names.Platform{
	{OS: "darwin", Arch: "arm64"}, {OS: "linux", Arch: "amd64"},
	{OS: "linux", Arch: "arm64"}, {OS: "windows", Arch: "amd64"},
}

// Options describe the provider to push.
type Options struct {
	// Type is the provider type in file names (default "big").
	Type string
	// Versions is how many versions to push: Version(0) … Version(n-1).
	Versions int
	// Platforms (default Platforms).
	Platforms []names.Platform
	// Signer signs each release's SHA256SUMS, as a publisher does; its
	// key is kept in the provenance, so the registry protocol lists them.
	Signer *pgp.Signer
	// Concurrency is how many versions are pushed at once (default 16).
	Concurrency int
}

// Version is the i-th version pushed: 1.0.0, 1.0.1, … 1.0.99, 1.1.0, …
func Version(i int) string {
	return fmt.Sprintf("%d.%d.%d", 1+i/10000, (i/100)%100, i%100)
}

// Provider pushes opts.Versions signed releases to repo. dir is scratch
// space for the release directories.
func Provider(ctx context.Context, repo oci.Repository, dir string, opts Options) error {
	if opts.Type == "" {
		opts.Type = "big"
	}
	if len(opts.Platforms) == 0 {
		opts.Platforms = Platforms
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 16
	}
	zips, err := writeZips(dir, opts)
	if err != nil {
		return err
	}
	if opts.Versions == 0 {
		return nil
	}
	// The first version alone: it uploads what every version shares (zips,
	// platform manifests, key, release manifest), which concurrent pushes
	// of the same manifest would race on (Distribution answers 500).
	if err := pushVersion(ctx, repo, dir, zips, Version(0), opts); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for i := 1; i < opts.Versions; i++ {
		g.Go(func() error { return pushVersion(gctx, repo, dir, zips, Version(i), opts) })
	}
	return g.Wait()
}

// writeZips writes one small zip per platform, shared by every version.
func writeZips(dir string, opts Options) (map[names.Platform]string, error) {
	out := map[names.Platform]string{}
	for _, p := range opts.Platforms {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "terraform-provider-" + opts.Type, Method: zip.Deflate, Modified: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "#!/bin/sh\necho %s provider for %s\n", opts.Type, p)
		if err := zw.Close(); err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "zip-"+p.String())
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return nil, err
		}
		out[p] = path
	}
	return out, nil
}

// pushVersion writes a release directory for version v (links to the
// shared zips and a release manifest), signs and pushes it.
func pushVersion(ctx context.Context, repo oci.Repository, dir string, zips map[names.Platform]string, v string, opts Options) error {
	rel, err := readVersion(ctx, dir, zips, v, opts)
	if err != nil {
		return fmt.Errorf("version %s: %w", v, err)
	}
	if _, err := rel.Push(ctx, repo, oci.PushOptions{}); err != nil {
		return fmt.Errorf("pushing version %s: %w", v, err)
	}
	return nil
}

// readVersion writes a release directory for version v in dir (links to
// the shared zips and a release manifest) and reads it, signed.
func readVersion(ctx context.Context, dir string, zips map[names.Platform]string, v string, opts Options) (*release.Provider, error) {
	rd := filepath.Join(dir, v)
	if err := os.MkdirAll(rd, 0o755); err != nil {
		return nil, err
	}
	for p, z := range zips {
		if err := os.Link(z, filepath.Join(rd, names.ProviderZipName(opts.Type, v, p))); err != nil {
			return nil, err
		}
	}
	manifest := filepath.Join(rd, fmt.Sprintf("%s%s_%s_manifest.json", names.ProviderFilePrefix, opts.Type, v))
	if err := os.WriteFile(manifest, []byte(`{"version":1,"metadata":{"protocol_versions":["5.0"]}}`), 0o644); err != nil {
		return nil, err
	}
	return release.ReadProvider(ctx, rd, release.Options{Signer: opts.Signer})
}

// PushVersion pushes one signed release of version v for opts.Platforms
// (opts.Type, opts.Signer) to repo as push provider does, replacing what
// the version's tag holds when replace is set (push --replace). dir is
// scratch space of its own.
func PushVersion(ctx context.Context, repo oci.Repository, dir, v string, opts Options, replace bool) error {
	if opts.Type == "" {
		opts.Type = "big"
	}
	zips, err := writeZips(dir, opts)
	if err != nil {
		return err
	}
	rel, err := readVersion(ctx, dir, zips, v, opts)
	if err != nil {
		return err
	}
	_, err = rel.Push(ctx, repo, oci.PushOptions{Replace: replace})
	if err == nil && rel.VersionIndexNote() != "" {
		err = errors.New(rel.VersionIndexNote())
	}
	return err
}
