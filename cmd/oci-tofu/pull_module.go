package main

import (
	"fmt"
	"os"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func pullModuleCommand() *cli.Command {
	return &cli.Command{
		Name:      "module",
		Usage:     "download an OpenTofu oci:// module package and unpack it",
		ArgsUsage: "REPOSITORY[:TAG|@DIGEST] DIR",
		Description: `Resolves the tag (default latest, as OpenTofu does) or digest, checks the
manifest as OpenTofu does, downloads the zip to a temporary file verifying its
digest, then unpacks it into DIR, which must not exist or be empty. Entries
that would land outside DIR, absolute paths and symbolic links are refused;
nothing appears in DIR unless everything was verified and unpacked.`,
		Flags: append(append([]cli.Flag{
			&cli.Int64Flag{Name: "max-size", Value: modulepkg.MaxSize, Usage: "refuse packages larger than this many `BYTES`, packed or unpacked"},
		}, registryFlags()...), outputFlags()...),
		Action: pullModule,
	}
}

// pinned is a reference with the digest it resolved to, written once:
// REPO:TAG@DIGEST, or REPO@DIGEST when a digest was asked for.
func pinned(ref oci.Reference, digest string) string {
	if ref.Reference == digest {
		return ref.String()
	}
	return ref.String() + "@" + digest
}

// pullModuleArgs are the reference (latest when it names no tag or
// digest), the directory and --max-size.
func pullModuleArgs(c *cli.Context) (oci.Reference, string, int64, error) {
	if err := wantArgs(c, 2, 2); err != nil {
		return oci.Reference{}, "", 0, err
	}
	ref, err := oci.ParseReference(c.Args().Get(0))
	if err != nil {
		return oci.Reference{}, "", 0, err
	}
	if ref.Reference == "" {
		ref.Reference = "latest"
	}
	if c.Int64("max-size") <= 0 {
		return oci.Reference{}, "", 0, fmt.Errorf("--max-size must be positive")
	}
	return ref, c.Args().Get(1), c.Int64("max-size"), nil
}

func pullModule(c *cli.Context) error {
	ref, dir, maxSize, err := pullModuleArgs(c)
	if err != nil {
		return err
	}
	rep := newReporter(c)
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	repo, err := client.OpenReadOnly(c.Context, ref)
	if err != nil {
		return err
	}
	manifest, layer, err := oci.ResolveModule(c.Context, repo, ref.Reference)
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	tmp, err := downloadModule(c, repo, ref, layer, maxSize)
	if tmp != "" {
		defer os.Remove(tmp)
	}
	if err != nil {
		return err
	}
	files, err := modulepkg.UnpackContext(c.Context, tmp, dir, maxSize)
	if err != nil {
		return fmt.Errorf("unpacking %s into %s: %w", ref, dir, err)
	}
	rep.Infof("verified the module package's zip (%s, %s)", layer.Digest, names.Plural(int(layer.Size), "byte"))
	return rep.Result(map[string]any{
		"reference":  ref.String(),
		"digest":     manifest.Digest.String(),
		"zip_digest": layer.Digest.String(),
		"zip_size":   layer.Size,
		"dir":        dir,
		"files":      files,
	}, fmt.Sprintf("unpacked %s into %s (%s)", pinned(ref, manifest.Digest.String()), dir, names.Plural(len(files), "file")))
}

// downloadModule downloads the package's zip into a temporary file,
// checking its digest and size; the file's name is returned also when the
// download fails, for the caller to remove it.
func downloadModule(c *cli.Context, repo oci.ReadOnlyRepository, ref oci.Reference, layer ocispec.Descriptor, maxSize int64) (string, error) {
	tmp, err := os.CreateTemp("", "oci-tofu-module-*.zip")
	if err != nil {
		return "", err
	}
	err = oci.FetchBlob(c.Context, repo, layer, maxSize, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return tmp.Name(), fmt.Errorf("%s: %w", ref, err)
	}
	return tmp.Name(), nil
}
