package main

import (
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/events/cliemit"
)

// eventsFlags are the flags of the commands that send events (push,
// mirror, prune; docs/events.md#what-the-cli-sends).
func eventsFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "events-file", Usage: "send what this run stores or deletes to the webhooks the subscriptions `FILE` names, as serve does (docs/events.md)", EnvVars: []string{"OCI_TOFU_EVENTS_FILE"}},
		&cli.StringFlag{Name: "events-source", Usage: "the events' source `URI` (default urn:oci-tofu:cli:<host name>)", EnvVars: []string{"OCI_TOFU_EVENTS_SOURCE"}},
	}
}

// withEvents runs action with --events-file's sender in c.Context
// (cliemit.From), opened before anything is written, and waits for its
// deliveries after (cliemit.Sender.Close: failures are told, not fatal).
func withEvents(action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.String("events-file") == "" {
			return action(c) // sends nothing (and the walk of a bare push stays short)
		}
		s, err := cliemit.Open(cliemit.Options{File: c.String("events-file"), Source: c.String("events-source"), Stderr: c.App.ErrWriter})
		if err != nil {
			return cli.Exit("--events-file: "+err.Error(), 1)
		}
		c.Context = cliemit.NewContext(c.Context, s)
		defer s.Close(c.Context)
		return action(c)
	}
}

// pushedEvent sends version.ingested, via push, for the version tags a
// push wrote to ref, under the address the policy matches (policyAddress; the
// repository's name should it not read as one).
func pushedEvent(c *cli.Context, kind names.Kind, ref oci.Reference, tags []string, res oci.PushResult) {
	if c.String("events-file") == "" {
		return
	}
	addr, err := policy.TofuAddress, error(nil)
	if kind != names.KindTofu {
		if addr, err = policyAddress(c, kind, ref); err != nil { // gate.go
			addr = ref.Name()
		}
	}
	cliemit.From(c.Context).Pushed(events.Kind(kind), addr, ref.Name(), tags, res)
}
