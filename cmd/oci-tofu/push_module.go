package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func pushModuleCommand() *cli.Command {
	return &cli.Command{
		Name:      "module",
		Usage:     "pack a module directory (or push a module zip) as an OpenTofu oci:// module package",
		ArgsUsage: "SOURCE REPOSITORY:TAG",
		Description: `SOURCE is a module directory or an existing .zip module package.

A directory is packed reproducibly: files sorted, timestamps and permissions
normalised, so the same tree always gives the same digest. Left out: .git and
.terraform directories, *.tfstate* files and whatever .terraformignore lists.
Symbolic links are followed when they stay inside the directory and refused
otherwise. A .zip is pushed byte for byte after checking its entries.

REPOSITORY is host[:port]/path in a registry, or oci-layout:PATH. TAG is a
version (1.4.0, 2.0.0-rc1, 1.0.0+build.5 written as 1.0.0_build.5), or any
other OCI tag such as latest. Tags that look like versions must be canonical
(not v1.4.0 or 1.4). Tags are written last, after all content.

OpenTofu (>= 1.10) installs the result with
  source = "oci://REPOSITORY?tag=TAG"`,
		Flags: append(append([]cli.Flag{
			&cli.StringSliceFlag{Name: "also-tag", Usage: "also write `TAG` (repeatable), e.g. latest or 1.4"},
			&cli.BoolFlag{Name: "allow-no-root", Usage: "accept a package without a .tf/.tofu file at its root (modules only in subdirectories)"},
			&cli.BoolFlag{Name: "no-cache", Usage: "always pack; do not consult or update the record of earlier packs (in the user cache directory)", EnvVars: []string{"OCI_TOFU_NO_CACHE"}},
		}, registryFlags()...), outputFlags()...),
		Action: pushModule,
	}
}

func pushModule(c *cli.Context) error {
	if err := wantArgs(c, 2, 2); err != nil {
		return err
	}
	source := c.Args().Get(0)
	ref, tag, err := parseModuleTarget(c.Args().Get(1))
	if err != nil {
		return err
	}
	tags, err := withAlsoTags(tag, c.StringSlice("also-tag"))
	if err != nil {
		return err
	}
	rep := newReporter(c)
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	z, done, err := moduleZip(c, rep, client, ref, tags, source)
	if err != nil || done {
		return err
	}
	defer z.Remove()
	art, err := oci.BuildModule(z.Blob())
	if err != nil {
		return err
	}
	repo, err := client.Open(ref)
	if err != nil {
		return err
	}
	held, err := oci.CurrentTags(c.Context, repo, tags)
	if err != nil {
		return fmt.Errorf("reading the tags of %s: %w", ref.Name(), err)
	}
	res, err := oci.Push(c.Context, repo, art, held, oci.PushOptions{Progress: rep.progress("uploading")})
	if err != nil {
		return fmt.Errorf("pushing to %s: %w (no tag was written)", ref.Name(), err)
	}
	return reportModulePush(rep, ref, tags, z.Digest.String(), z.Size, len(z.Files), res)
}

// withAlsoTags is the target's tag and each --also-tag, once each.
func withAlsoTags(tag string, also []string) ([]string, error) {
	tags := []string{tag}
	for _, t := range also {
		t, err := moduleTag(t)
		if err != nil {
			return nil, fmt.Errorf("--also-tag: %w", err)
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return tags, nil
}

// moduleZip is the module package to push: source packed (a directory)
// or checked (a zip). done: the tags already hold what an unchanged,
// earlier packed directory gives, reported as up to date.
func moduleZip(c *cli.Context, rep *reporter, client *oci.Client, ref oci.Reference, tags []string, source string) (*modulepkg.Zip, bool, error) {
	fi, err := os.Stat(source)
	if err != nil {
		return nil, false, err
	}
	if !fi.IsDir() {
		z, err := modulepkg.OpenZipContext(c.Context, source, c.Bool("allow-no-root"))
		if err != nil {
			return nil, false, err
		}
		rep.infof("checked %s: %s, %s, %s", source, plural(len(z.Files), "file"), plural(int(z.Size), "byte"), z.Digest)
		return z, false, nil
	}
	opts := modulepkg.Options{AllowNoRoot: c.Bool("allow-no-root")}
	if !c.Bool("no-cache") {
		opts.Cache = modulepkg.DefaultCache()
	}
	if opts.Cache != nil {
		// An unchanged tree that was packed before and whose tags
		// already point at the result needs no packing at all.
		tree, names, err := modulepkg.HashTree(c.Context, source, opts)
		if err != nil {
			return nil, false, err
		}
		if zd, size, ok := opts.Cache.Lookup(tree); ok {
			if done, err := upToDate(c, rep, client, ref, tags, oci.ModuleLayerDescriptor(zd, size), len(names)); done || err != nil {
				return nil, done, err
			}
		}
	}
	z, err := modulepkg.Pack(c.Context, source, opts)
	if err != nil {
		return nil, false, err
	}
	rep.infof("packed %s: %s, %s, %s", source, plural(len(z.Files), "file"), plural(int(z.Size), "byte"), z.Digest)
	return z, false, nil
}

// upToDate checks whether the tags already point at the module built from
// a zip layer recorded for this tree, and reports so; done is false when a
// push is needed. Registry errors only mean the shortcut is not taken.
func upToDate(c *cli.Context, rep *reporter, client *oci.Client, ref oci.Reference, tags []string, zip ocispec.Descriptor, files int) (done bool, err error) {
	repo, err := client.OpenReadOnly(c.Context, ref)
	if err != nil {
		return false, nil
	}
	root, err := oci.ModuleRoot(zip)
	if err != nil {
		return false, nil
	}
	held, err := oci.CurrentTags(c.Context, repo, tags)
	if err != nil || !held.AllHold(root.Digest) {
		return false, nil
	}
	rep.infof("unchanged since it was packed as %s", zip.Digest)
	return true, reportModulePush(rep, ref, tags, zip.Digest.String(), zip.Size, files, oci.PushResult{Root: root, UpToDate: true})
}

func reportModulePush(rep *reporter, ref oci.Reference, tags []string, zipDigest string, zipSize int64, files int, res oci.PushResult) error {
	tag := tags[0]
	primary := ref.WithReference(tag)
	human := pushedLine(primary, res)
	result := map[string]any{
		"reference":      primary.String(),
		"digest":         res.Root.Digest.String(),
		"tags":           tags,
		"zip_digest":     zipDigest,
		"zip_size":       zipSize,
		"files":          files,
		"up_to_date":     res.UpToDate,
		"uploaded":       res.Uploaded,
		"skipped":        res.Skipped,
		"uploaded_bytes": res.UploadedBytes,
	}
	if !ref.Layout {
		src := "oci://" + ref.Name() + "?tag=" + tag
		result["source"] = src
		result["source_digest"] = "oci://" + ref.Name() + "?digest=" + res.Root.Digest.String()
		human += "\n  source = \"" + src + "\""
	}
	return rep.result(result, human)
}

// parseModuleTarget splits REPOSITORY:TAG, accepting '+' in a version tag
// (which a reference parser would refuse) and mapping it to '_'.
func parseModuleTarget(s string) (oci.Reference, string, error) {
	if strings.Contains(s, "@") {
		return oci.Reference{}, "", fmt.Errorf("%s: push to a tag (REPOSITORY:TAG), not a digest", s)
	}
	repo, tag := s, ""
	if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") && i > len(oci.LayoutPrefix)-1 {
		repo, tag = s[:i], s[i+1:]
	}
	if tag == "" {
		return oci.Reference{}, "", fmt.Errorf("%s: give a tag, e.g. %s:1.0.0 (OpenTofu reads ?tag=… and defaults to latest)", s, s)
	}
	ref, err := oci.ParseReference(repo)
	if err != nil {
		return oci.Reference{}, "", err
	}
	if ref.Reference != "" {
		return oci.Reference{}, "", fmt.Errorf("invalid reference %q", s)
	}
	tag, err = moduleTag(tag)
	if err != nil {
		return oci.Reference{}, "", err
	}
	return ref, tag, nil
}

var (
	ociTagPattern = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
	// versionish tags must be canonical versions: a leading digit, or v
	// followed by a digit.
	versionish = regexp.MustCompile(`^[vV]?[0-9]`)
)

// moduleTag validates a tag. Anything that looks like a version must be a
// canonical one, because the registry protocol lists versions from tags and
// OpenTofu resolves the canonical spelling; '+' becomes '_'.
func moduleTag(t string) (string, error) {
	if versionish.MatchString(t) {
		if v, ok := names.VersionFromTag(t); ok {
			return names.TagForVersion(v), nil
		}
		if t[0] == 'v' || t[0] == 'V' {
			return "", fmt.Errorf("tag %q looks like a version but is not a canonical one: write it without the %q (%s)", t, t[:1], t[1:])
		}
		v, err := names.ParseVersion(t)
		if err != nil {
			return "", fmt.Errorf("tag %q looks like a version but is not a canonical one (write e.g. 1.4.0 or 2.0.0-rc1): %w", t, err)
		}
		t = names.TagForVersion(v)
	}
	if !ociTagPattern.MatchString(t) {
		return "", fmt.Errorf("invalid tag %q: tags are up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'", t)
	}
	return t, nil
}
