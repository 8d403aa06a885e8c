package main

import (
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
)

// tagFlags are --replace and --also-tag, the same for every push of a
// version (provider, module, OpenTofu release): the one rule for version
// tags is oci.Tags.CheckVersions (docs/artifacts.md, "Tag writes").
func tagFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "also-tag", Usage: "also write `TAG` (repeatable), a pointer such as latest that moves to this push"},
		replaceFlag(),
	}
}

func replaceFlag() cli.Flag {
	return &cli.BoolFlag{Name: "replace", Usage: "overwrite a version tag that already holds different content (a version is otherwise written once)"}
}

// pushOptions are the push options every push command shares.
func pushOptions(c *cli.Context, rep *report.Reporter) oci.PushOptions {
	return oci.PushOptions{Progress: rep.Progress("uploading"), Replace: c.Bool("replace")}
}

// alsoTags are the --also-tag values, checked and canonical, without tag.
func alsoTags(c *cli.Context, tag string) ([]string, error) {
	tags, err := withAlsoTags(tag, c.StringSlice("also-tag"))
	if err != nil {
		return nil, err
	}
	return tags[1:], nil
}

// withAlsoTags is the target's tag and each --also-tag, once each.
func withAlsoTags(tag string, also []string) ([]string, error) {
	tags := []string{tag}
	for _, t := range also {
		t, err := modulepkg.Tag(t)
		if err != nil {
			return nil, fmt.Errorf("--also-tag: %w", err)
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return tags, nil
}
