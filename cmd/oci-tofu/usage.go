package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

func usageCommand() *cli.Command {
	return &cli.Command{
		Name:      "usage",
		Usage:     "who downloaded what, from the proxy's audit trail or a fleet's counts",
		ArgsUsage: "[ADDRESS[@VERSION]...]",
		Description: `Answers from the audit trail of serve --audit-log (--audit-log FILE: the file and
the files it was rotated into; or a directory of several replicas' files), or from the
download counts a fleet keeps in its shared cache (--shared-cache URL, the Redis of
serve --shared-cache; the password in OCI_TOFU_SHARED_CACHE_PASSWORD).

  oci-tofu usage --audit-log audit.log                 the most downloaded addresses and
                                                      versions, each client's downloads,
                                                      the requests refused
  oci-tofu usage --audit-log audit.log ADDRESS[@VERSION]   who downloaded it, when last
  oci-tofu usage --audit-log audit.log --not-downloaded-since 90d
                                                      versions not downloaded since then
  oci-tofu usage --audit-log audit.log --client ci-prod   what one client downloads

ADDRESS is what clients asked for: a provider (example.com/hashicorp/aws, with the
proxy's host through the registry protocol), a module (host/namespace/name/system) or
opentofu for OpenTofu releases. WHEN is a date (2026-08-01), a time (RFC 3339) or a
period before now (90d, 36h). Counts are of artifacts delivered (provider and module
packages, OpenTofu release files). A version never downloaded is in no trail:
prune --keep-downloaded-within finds those in the registry.`,
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "audit-log", Usage: "a proxy's audit trail `FILE` (its rotated files are read too) or a directory of several replicas' (repeatable)"},
			&cli.StringFlag{Name: "shared-cache", Usage: "Redis `URL` of a fleet's shared cache (serve --shared-cache), instead of audit files", EnvVars: []string{"OCI_TOFU_SHARED_CACHE"}},
			&cli.StringFlag{Name: "ca-file", Usage: "PEM `FILE` of extra CA certificates to trust for rediss://", EnvVars: []string{"OCI_TOFU_CA_FILE"}},
			&cli.StringFlag{Name: "since", Usage: "count downloads from `WHEN` on (audit files only)"},
			&cli.StringFlag{Name: "until", Usage: "count downloads before `WHEN` (audit files only)"},
			&cli.StringFlag{Name: "client", Usage: "count only the downloads of client `NAME`"},
			&cli.StringFlag{Name: "not-downloaded-since", Usage: "list the versions last downloaded before `WHEN`"},
			&cli.IntFlag{Name: "top", Value: 20, Usage: "at most `N` rows per list (0: all)"},
		}, outputFlags()...),
		Action: runUsage,
	}
}

func runUsage(c *cli.Context) error {
	asked, err := usageArgs(c)
	if err != nil {
		return err
	}
	filter, err := usageFilter(c)
	if err != nil {
		return err
	}
	var unusedSince time.Time
	if s := c.String("not-downloaded-since"); s != "" {
		if unusedSince, err = audit.ParseWhen(s, time.Now()); err != nil {
			return usageError(c, "--not-downloaded-since: %v", err)
		}
	}
	tally, src, err := readUsage(c, filter)
	if err != nil {
		return err
	}
	rep := audit.NewReport(tally, src, filter, audit.Query{Asked: asked, UnusedSince: unusedSince, Top: c.Int("top")})
	return newReporter(c).Result(rep, rep.Text())
}

// usageArgs are the ADDRESS[@VERSION] arguments.
func usageArgs(c *cli.Context) ([]audit.Asked, error) {
	var out []audit.Asked
	for _, a := range c.Args().Slice() {
		addr, v, _ := strings.Cut(a, "@")
		if addr == "" || strings.ContainsAny(addr, " \t\n") {
			return nil, usageError(c, "%q: write an address as clients use it, ADDRESS[@VERSION]", a)
		}
		out = append(out, audit.Asked{Address: strings.ToLower(addr), Version: v})
	}
	return out, nil
}

// usageFilter reads --since, --until and --client.
func usageFilter(c *cli.Context) (audit.Filter, error) {
	now := time.Now()
	f := audit.Filter{Client: c.String("client")}
	for _, w := range []struct {
		flag string
		at   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if s := c.String(w.flag); s != "" {
			t, err := audit.ParseWhen(s, now)
			if err != nil {
				return f, usageError(c, "--%s: %v", w.flag, err)
			}
			*w.at = t
		}
	}
	return f, nil
}

// readUsage tallies the audit files, or reads the fleet's counts.
func readUsage(c *cli.Context, f audit.Filter) (*audit.Tally, audit.Source, error) {
	logs, shared := c.StringSlice("audit-log"), c.String("shared-cache")
	tally := audit.NewTally(f)
	switch {
	case len(logs) > 0 && shared != "":
		return nil, audit.Source{}, usageError(c, "give --audit-log or --shared-cache, not both")
	case len(logs) > 0:
		files, err := audit.ScanPaths(c.Context, logs, tally)
		if err != nil {
			return nil, audit.Source{}, err
		}
		return tally, audit.Source{Files: files}, nil
	case shared != "":
		if !f.Since.IsZero() || !f.Until.IsZero() {
			return nil, audit.Source{}, usageError(c, "--since and --until need audit files: the fleet's counts keep totals and the last download")
		}
		err := readFleetCounts(c, shared, tally)
		return tally, audit.Source{SharedCache: sharedstate.RedactURL(shared)}, err
	}
	return nil, audit.Source{}, usageError(c, "give the audit trail (--audit-log FILE) or a fleet's shared cache (--shared-cache URL)")
}

// readFleetCounts adds the counts a fleet keeps in Redis to tally.
func readFleetCounts(c *cli.Context, raw string, tally *audit.Tally) error {
	r, err := openSharedCache(c, raw, nil, 10*time.Second)
	if err != nil {
		return err
	}
	defer r.Close()
	counts, err := r.Downloads(c.Context)
	if err != nil {
		return fmt.Errorf("--shared-cache: %w", err)
	}
	for _, n := range counts {
		tally.AddCount(audit.Key{Kind: n.Kind, Address: n.Address, Version: n.Version, Client: n.Client}, n.Count, n.Last)
	}
	return nil
}
