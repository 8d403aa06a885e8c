package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/prune"
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

// usageReport is what usage prints (--json: as it is).
type usageReport struct {
	Source    usageSource    `json:"source"`
	Events    int64          `json:"events"`
	Malformed int64          `json:"malformed_lines,omitempty"`
	Partial   bool           `json:"partial,omitempty"`
	Addresses []audit.Row    `json:"addresses,omitempty"`
	Versions  []audit.Row    `json:"versions,omitempty"`
	Clients   []audit.Row    `json:"clients,omitempty"`
	Refusals  []usageRefusal `json:"refusals,omitempty"`
	Users     []audit.Row    `json:"users,omitempty"`
	Unused    []audit.Row    `json:"not_downloaded_since,omitempty"`
	Asked     []usageAsked   `json:"asked,omitempty"`
	Window    *usageWindow   `json:"window,omitempty"`
	unusedAt  time.Time
}

type usageSource struct {
	Files       []string `json:"files,omitempty"`
	SharedCache string   `json:"shared_cache,omitempty"`
}

type usageRefusal struct {
	Client  string `json:"client"`
	Outcome string `json:"outcome"`
	Count   int64  `json:"count"`
	// Unverified: the name is one a token claimed (--registry-decides,
	// a credential the registry did not accept).
	Unverified bool `json:"unverified,omitempty"`
}

type usageAsked struct {
	Address string `json:"address"`
	Version string `json:"version,omitempty"`
}

type usageWindow struct {
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
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
		if unusedSince, err = parseWhen(s, time.Now()); err != nil {
			return usageError(c, "--not-downloaded-since: %v", err)
		}
	}
	tally, src, err := readUsage(c, filter)
	if err != nil {
		return err
	}
	rep := usageReport{Source: src, Events: tally.Events, Malformed: tally.Malformed, Partial: tally.Partial(), Asked: asked, unusedAt: unusedSince}
	if !filter.Since.IsZero() || !filter.Until.IsZero() {
		rep.Window = &usageWindow{Since: filter.Since, Until: filter.Until}
	}
	top := c.Int("top")
	switch {
	case len(asked) > 0:
		rep.Users = limit(whoUses(tally, asked), 0)
	case !unusedSince.IsZero():
		rep.Unused = limit(notDownloadedSince(tally, unusedSince), top)
	default:
		rep.Addresses = limit(tally.Group(audit.ByAddress), top)
		rep.Versions = limit(tally.Group(audit.ByVersion), top)
		rep.Clients = limit(tally.Group(audit.ByClient), top)
		rep.Refusals = refusals(tally)
	}
	return newReporter(c).result(rep, rep.human())
}

// usageArgs are the ADDRESS[@VERSION] arguments.
func usageArgs(c *cli.Context) ([]usageAsked, error) {
	var out []usageAsked
	for _, a := range c.Args().Slice() {
		addr, v, _ := strings.Cut(a, "@")
		if addr == "" || strings.ContainsAny(addr, " \t\n") {
			return nil, usageError(c, "%q: write an address as clients use it, ADDRESS[@VERSION]", a)
		}
		out = append(out, usageAsked{Address: strings.ToLower(addr), Version: v})
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
			t, err := parseWhen(s, now)
			if err != nil {
				return f, usageError(c, "--%s: %v", w.flag, err)
			}
			*w.at = t
		}
	}
	return f, nil
}

// parseWhen reads a date, an RFC 3339 time, or a period before now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := prune.ParsePeriod(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: write a date (2026-08-01), a time (RFC 3339) or a period before now (90d, 36h)", s)
	}
	return now.Add(-d), nil
}

// readUsage tallies the audit files, or reads the fleet's counts.
func readUsage(c *cli.Context, f audit.Filter) (*audit.Tally, usageSource, error) {
	logs, shared := c.StringSlice("audit-log"), c.String("shared-cache")
	tally := audit.NewTally(f)
	switch {
	case len(logs) > 0 && shared != "":
		return nil, usageSource{}, usageError(c, "give --audit-log or --shared-cache, not both")
	case len(logs) > 0:
		files, err := audit.FilesOf(logs)
		if err != nil {
			return nil, usageSource{}, err
		}
		return tally, usageSource{Files: files}, audit.Scan(c.Context, files, tally)
	case shared != "":
		if !f.Since.IsZero() || !f.Until.IsZero() {
			return nil, usageSource{}, usageError(c, "--since and --until need audit files: the fleet's counts keep totals and the last download")
		}
		err := readFleetCounts(c, shared, tally)
		return tally, usageSource{SharedCache: sharedstate.RedactURL(shared)}, err
	}
	return nil, usageSource{}, usageError(c, "give the audit trail (--audit-log FILE) or a fleet's shared cache (--shared-cache URL)")
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

// whoUses is the downloads of the asked addresses (and versions), by
// version and client.
func whoUses(t *audit.Tally, asked []usageAsked) []audit.Row {
	var out []audit.Row
	for _, r := range t.Group(audit.ByVersionClient) {
		for _, a := range asked {
			if strings.EqualFold(r.Address, a.Address) && (a.Version == "" || r.Version == a.Version) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// notDownloadedSince is the versions whose last download is before at,
// the longest unused first.
func notDownloadedSince(t *audit.Tally, at time.Time) []audit.Row {
	var out []audit.Row
	for _, r := range t.Group(audit.ByVersion) {
		if r.Last.Before(at) {
			out = append(out, r)
		}
	}
	slicesSortByLast(out)
	return out
}

func refusals(t *audit.Tally) []usageRefusal {
	var out []usageRefusal
	for r, n := range t.Refusals {
		out = append(out, usageRefusal{Client: r.Client, Outcome: r.Outcome, Count: n, Unverified: r.Unverified})
	}
	sortRefusals(out)
	return out
}

func limit(rows []audit.Row, n int) []audit.Row {
	if n > 0 && len(rows) > n {
		return rows[:n]
	}
	return rows
}

// human is the report as tables.
func (r usageReport) human() string {
	var b strings.Builder
	from := strings.Join(r.Source.Files, ", ")
	if r.Source.SharedCache != "" {
		from = "the shared cache " + r.Source.SharedCache
	}
	if r.Source.Files != nil {
		fmt.Fprintf(&b, "%d events in %s", r.Events, from)
	} else {
		fmt.Fprintf(&b, "download counts in %s", from)
	}
	if r.Malformed > 0 {
		fmt.Fprintf(&b, " (%d lines that are not events skipped)", r.Malformed)
	}
	b.WriteString("\n")
	if r.Partial {
		fmt.Fprintf(&b, "partial: more than %d versions and clients; narrow with --since, --until or --client\n", audit.MaxKeys)
	}
	switch {
	case r.Asked != nil:
		table(&b, "who downloaded "+askedList(r.Asked), []string{"DOWNLOADS", "LAST", "VERSION", "CLIENT"}, r.Users, func(x audit.Row) []string {
			return []string{fmt.Sprint(x.Count), day(x.Last), x.Version, x.Client}
		})
	case !r.unusedAt.IsZero():
		table(&b, "not downloaded since "+day(r.unusedAt), []string{"LAST", "DOWNLOADS", "CLIENTS", "KIND", "ADDRESS", "VERSION"}, r.Unused, func(x audit.Row) []string {
			return []string{day(x.Last), fmt.Sprint(x.Count), fmt.Sprint(x.Clients), x.Kind, x.Address, x.Version}
		})
	default:
		table(&b, "addresses", []string{"DOWNLOADS", "CLIENTS", "LAST", "KIND", "ADDRESS"}, r.Addresses, func(x audit.Row) []string {
			return []string{fmt.Sprint(x.Count), fmt.Sprint(x.Clients), day(x.Last), x.Kind, x.Address}
		})
		table(&b, "versions", []string{"DOWNLOADS", "CLIENTS", "LAST", "ADDRESS", "VERSION"}, r.Versions, func(x audit.Row) []string {
			return []string{fmt.Sprint(x.Count), fmt.Sprint(x.Clients), day(x.Last), x.Address, x.Version}
		})
		table(&b, "clients", []string{"DOWNLOADS", "LAST", "CLIENT"}, r.Clients, func(x audit.Row) []string {
			return []string{fmt.Sprint(x.Count), day(x.Last), x.Client}
		})
		table(&b, "refused", []string{"COUNT", "OUTCOME", "CLIENT"}, r.Refusals, func(x usageRefusal) []string {
			if x.Unverified {
				return []string{fmt.Sprint(x.Count), x.Outcome, x.Client + " (unverified)"}
			}
			return []string{fmt.Sprint(x.Count), x.Outcome, x.Client}
		})
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// table writes a titled table, or that there is nothing.
func table[T any](b *strings.Builder, title string, header []string, rows []T, cells func(T) []string) {
	fmt.Fprintf(b, "\n%s:\n", title)
	if len(rows) == 0 {
		b.WriteString("  none\n")
		return
	}
	w := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  "+strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(w, "  "+strings.Join(cells(r), "\t"))
	}
	w.Flush()
}

func day(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04")
}

func askedList(asked []usageAsked) string {
	var s []string
	for _, a := range asked {
		if a.Version != "" {
			s = append(s, a.Address+"@"+a.Version)
		} else {
			s = append(s, a.Address)
		}
	}
	return strings.Join(s, ", ")
}

func slicesSortByLast(rows []audit.Row) {
	slices.SortStableFunc(rows, func(a, b audit.Row) int { return a.Last.Compare(b.Last) })
}

func sortRefusals(rs []usageRefusal) {
	slices.SortFunc(rs, func(a, b usageRefusal) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Client, b.Client), cmp.Compare(a.Outcome, b.Outcome), boolOrder(a.Unverified, b.Unverified))
	})
}

// boolOrder orders false before true.
func boolOrder(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
