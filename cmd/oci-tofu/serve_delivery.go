package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/protocol/proxy"
)

// archiveDeliveryFlag chooses how archives reach clients (docs/proxy.md,
// "Archive delivery").
func archiveDeliveryFlag() cli.Flag {
	return &cli.StringFlag{Name: "archive-delivery", Value: "stream", Usage: "how archives reach clients: stream (through the proxy, digest checked) or redirect (to the registry's storage when the registry redirects blob downloads; streamed otherwise)", EnvVars: []string{"OCI_TOFU_ARCHIVE_DELIVERY"}}
}

// readArchiveDelivery reads --archive-delivery.
func readArchiveDelivery(c *cli.Context, opts *proxy.Options) error {
	switch v := c.String("archive-delivery"); v {
	case "stream":
	case "redirect":
		opts.RedirectArchives = true
	default:
		return fmt.Errorf("--archive-delivery %q: want stream or redirect", v)
	}
	return nil
}
