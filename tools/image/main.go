// Command image builds the oci-tofu container image without a container
// engine: it cross-compiles the static binary, lays out a minimal root
// filesystem (the binary, Debian's CA bundle from the build machine,
// /etc/passwd and /etc/group with the non-root user 65532, /tmp) and
// writes a multi-platform image as an OCI image layout directory, which
// crane, regctl, skopeo or oras copy to any registry. With --push it
// copies the image to a registry itself; with --attest-key too, it signs
// the pushed index and attaches its SLSA build provenance and an SPDX SBOM
// of the binary's Go modules as cosign attestations (attest.go, sbom.go).
//
// The build is reproducible: the same source, Go release, CA bundle,
// flags and SOURCE_DATE_EPOCH give the same digests.
//
//	SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) go run ./tools/image \
//	    --out out/image --tag v1.2.3 --version v1.2.3 --revision $(git rev-parse HEAD)
//
// `make image` runs it.
package main

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// options are the inputs of a build.
type options struct {
	Out       string
	Tag       string
	Meta      metadata
	Platforms []platform
	CABundle  string
	ModuleDir string
	Go        string
	Push      string
	PlainHTTP bool
	AttestKey string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(ctx, opts)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// parseFlags reads the command line; the build time comes from
// SOURCE_DATE_EPOCH (seconds since 1970; 0 when unset).
func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var o options
	var platforms, epoch string
	fs.StringVar(&o.Out, "out", "out/image", "OCI image layout `DIR` to write (replaced if it is one)")
	fs.StringVar(&o.Tag, "tag", "", "tag of the image in the layout (default: --version)")
	fs.StringVar(&o.Meta.Version, "version", "dev", "version compiled into the binary (main.version) and put in the labels")
	fs.StringVar(&o.Meta.Revision, "revision", "", "VCS revision for the org.opencontainers.image.revision label")
	fs.StringVar(&o.Meta.Source, "source", "https://github.com/oci-tofu/oci-tofu", "source repository URL for the labels")
	fs.StringVar(&platforms, "platform", "linux/amd64,linux/arm64", "comma-separated platforms")
	fs.StringVar(&o.CABundle, "ca-bundle", "", "CA bundle `FILE` to ship instead of the Mozilla bundle pinned in go.mod (golang.org/x/crypto/x509roots/fallback)")
	fs.StringVar(&o.ModuleDir, "module", ".", "oci-tofu module `DIR` to build ./cmd/oci-tofu from")
	fs.StringVar(&o.Go, "go", "go", "go command")
	fs.StringVar(&o.Push, "push", "", "after writing the layout, copy the image to `REGISTRY/REPOSITORY[:TAG]` (docker config credentials)")
	fs.StringVar(&o.AttestKey, "attest-key", os.Getenv("OCI_TOFU_ATTEST_KEY"), "with --push, sign the pushed index with this PEM private key `FILE` (ECDSA P-256, Ed25519, or cosign's encrypted key with COSIGN_PASSWORD) and attach its SLSA provenance and SPDX SBOM as attestations, as cosign does (default: $OCI_TOFU_ATTEST_KEY)")
	fs.BoolVar(&o.PlainHTTP, "plain-http", false, "push over plain HTTP (local test registries only)")
	fs.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "build time in seconds since 1970 (default: $SOURCE_DATE_EPOCH, else 0)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	var err error
	if o.Meta.Created, err = parseEpoch(epoch); err != nil {
		return o, err
	}
	if o.Platforms, err = parsePlatforms(platforms); err != nil {
		return o, err
	}
	if o.Tag == "" {
		o.Tag = o.Meta.Version
	}
	if !names.ValidTag(o.Tag) {
		return o, fmt.Errorf("tag %q is not a valid OCI tag", o.Tag)
	}
	if o.AttestKey != "" && o.Push == "" {
		return o, fmt.Errorf("--attest-key signs the image in the registry it is pushed to: it needs --push (IMAGE_PUSH)")
	}
	return o, nil
}

// parseEpoch parses SOURCE_DATE_EPOCH; empty means 1970-01-01.
func parseEpoch(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: not a non-negative number of seconds", s)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// run builds the image, writes the layout and pushes it if asked to.
func run(ctx context.Context, o options) error {
	images, build, err := buildImages(ctx, o)
	if err != nil {
		return err
	}
	index, err := assembleIndex(o.Meta, images)
	if err != nil {
		return err
	}
	if err := writeLayout(o.Out, o.Tag, index, images); err != nil {
		return err
	}
	fmt.Printf("%s:%s %s\n", o.Out, o.Tag, index.Desc.Digest)
	for _, img := range images {
		fmt.Printf("  %s %s\n", img.Platform, img.Manifest.Desc.Digest)
	}
	if o.Push == "" {
		return nil
	}
	desc, err := pushLayout(ctx, o.Out, o.Tag, o.Push, o.PlainHTTP)
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s %s\n", o.Push, desc.Digest)
	if o.AttestKey == "" {
		return nil
	}
	ref, err := oci.ParseRegistryReference(o.Push)
	if err != nil {
		return fmt.Errorf("--push %q: %w", o.Push, err)
	}
	return attestPushed(ctx, o, ref, desc.Digest, build)
}

// buildImages builds each platform's image: the shared base layer and a
// layer with that platform's binary. It returns the Go build information
// of the first platform's binary (the module graph is the same for all).
func buildImages(ctx context.Context, o options) ([]platformImage, *debug.BuildInfo, error) {
	certs, err := caBundle(o.CABundle)
	if err != nil {
		return nil, nil, err
	}
	base, err := buildLayer(baseFiles(certs), o.Meta.Created)
	if err != nil {
		return nil, nil, err
	}
	work, err := os.MkdirTemp("", "oci-tofu-image-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(work)
	var images []platformImage
	var build *debug.BuildInfo
	for _, p := range o.Platforms {
		binary, err := buildBinary(ctx, o.Go, o.ModuleDir, work, p, o.Meta.Version)
		if err != nil {
			return nil, nil, err
		}
		if build == nil {
			if build, err = buildinfo.Read(bytes.NewReader(binary)); err != nil {
				return nil, nil, fmt.Errorf("reading the Go build information of the %s binary: %w", p, err)
			}
		}
		top, err := buildLayer(binaryFiles(binary), o.Meta.Created)
		if err != nil {
			return nil, nil, err
		}
		img, err := assemblePlatform(p, o.Meta, []layer{base, top})
		if err != nil {
			return nil, nil, err
		}
		images = append(images, img)
	}
	return images, build, nil
}
