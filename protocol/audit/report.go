package audit

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/prune"
)

// Report is what `oci-tofu usage` prints (--json: as it is): from the
// audit files or a fleet's counts (Source), the most downloaded addresses,
// versions and clients and the refusals; or who downloaded the addresses
// asked about; or the versions not downloaded since a time.
type Report struct {
	Source    Source         `json:"source"`
	Events    int64          `json:"events"`
	Malformed int64          `json:"malformed_lines,omitempty"`
	Partial   bool           `json:"partial,omitempty"`
	Addresses []Row          `json:"addresses,omitempty"`
	Versions  []Row          `json:"versions,omitempty"`
	Clients   []Row          `json:"clients,omitempty"`
	Refusals  []RefusalCount `json:"refusals,omitempty"`
	Users     []Row          `json:"users,omitempty"`
	Unused    []Row          `json:"not_downloaded_since,omitempty"`
	Asked     []Asked        `json:"asked,omitempty"`
	Window    *Window        `json:"window,omitempty"`
	unusedAt  time.Time
}

// Source is where a report was read from: audit files, or a fleet's
// shared cache (its URL without the password).
type Source struct {
	Files       []string `json:"files,omitempty"`
	SharedCache string   `json:"shared_cache,omitempty"`
}

// RefusalCount is how many requests a client had refused, by outcome.
type RefusalCount struct {
	Client  string `json:"client"`
	Outcome string `json:"outcome"`
	Count   int64  `json:"count"`
	// Unverified: the name is one a token claimed (--registry-decides,
	// a credential the registry did not accept).
	Unverified bool `json:"unverified,omitempty"`
}

// Asked is an address, and optionally a version, a report was asked about.
type Asked struct {
	Address string `json:"address"`
	Version string `json:"version,omitempty"`
}

// Window is the time a report counts downloads in (audit files only).
type Window struct {
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
}

// Query is what a report answers.
type Query struct {
	// Asked, when set, are the addresses (and versions) whose downloads to
	// list, by version and client.
	Asked []Asked
	// UnusedSince, when set (and nothing is asked), lists the versions
	// last downloaded before it.
	UnusedSince time.Time
	// Top bounds each list (0: all); the downloads of what was asked are
	// never bounded.
	Top int
}

// NewReport reports t (read from src, through filter) as q asks.
func NewReport(t *Tally, src Source, filter Filter, q Query) Report {
	rep := Report{Source: src, Events: t.Events, Malformed: t.Malformed, Partial: t.Partial(), Asked: q.Asked, unusedAt: q.UnusedSince}
	if !filter.Since.IsZero() || !filter.Until.IsZero() {
		rep.Window = &Window{Since: filter.Since, Until: filter.Until}
	}
	switch {
	case len(q.Asked) > 0:
		rep.Users = limit(whoUses(t, q.Asked), 0)
	case !q.UnusedSince.IsZero():
		rep.Unused = limit(notDownloadedSince(t, q.UnusedSince), q.Top)
	default:
		rep.Addresses = limit(t.Group(ByAddress), q.Top)
		rep.Versions = limit(t.Group(ByVersion), q.Top)
		rep.Clients = limit(t.Group(ByClient), q.Top)
		rep.Refusals = refusals(t)
	}
	return rep
}

// whoUses is the downloads of the asked addresses (and versions), by
// version and client.
func whoUses(t *Tally, asked []Asked) []Row {
	var out []Row
	for _, r := range t.Group(ByVersionClient) {
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
func notDownloadedSince(t *Tally, at time.Time) []Row {
	var out []Row
	for _, r := range t.Group(ByVersion) {
		if r.Last.Before(at) {
			out = append(out, r)
		}
	}
	slicesSortByLast(out)
	return out
}

func refusals(t *Tally) []RefusalCount {
	var out []RefusalCount
	for r, n := range t.Refusals {
		out = append(out, RefusalCount{Client: r.Client, Outcome: r.Outcome, Count: n, Unverified: r.Unverified})
	}
	sortRefusals(out)
	return out
}

func limit(rows []Row, n int) []Row {
	if n > 0 && len(rows) > n {
		return rows[:n]
	}
	return rows
}

// Text is the report as tables.
func (r Report) Text() string {
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
		fmt.Fprintf(&b, "partial: more than %d versions and clients; narrow with --since, --until or --client\n", MaxKeys)
	}
	switch {
	case r.Asked != nil:
		table(&b, "who downloaded "+askedList(r.Asked), []string{"DOWNLOADS", "LAST", "VERSION", "CLIENT"}, r.Users, func(x Row) []string {
			return []string{fmt.Sprint(x.Count), day(x.Last), x.Version, x.Client}
		})
	case !r.unusedAt.IsZero():
		table(&b, "not downloaded since "+day(r.unusedAt), []string{"LAST", "DOWNLOADS", "CLIENTS", "KIND", "ADDRESS", "VERSION"}, r.Unused, func(x Row) []string {
			return []string{day(x.Last), fmt.Sprint(x.Count), fmt.Sprint(x.Clients), x.Kind, x.Address, x.Version}
		})
	default:
		table(&b, "addresses", []string{"DOWNLOADS", "CLIENTS", "LAST", "KIND", "ADDRESS"}, r.Addresses, func(x Row) []string {
			return []string{fmt.Sprint(x.Count), fmt.Sprint(x.Clients), day(x.Last), x.Kind, x.Address}
		})
		table(&b, "versions", []string{"DOWNLOADS", "CLIENTS", "LAST", "ADDRESS", "VERSION"}, r.Versions, func(x Row) []string {
			return []string{fmt.Sprint(x.Count), fmt.Sprint(x.Clients), day(x.Last), x.Address, x.Version}
		})
		table(&b, "clients", []string{"DOWNLOADS", "LAST", "CLIENT"}, r.Clients, func(x Row) []string {
			return []string{fmt.Sprint(x.Count), day(x.Last), x.Client}
		})
		table(&b, "refused", []string{"COUNT", "OUTCOME", "CLIENT"}, r.Refusals, func(x RefusalCount) []string {
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

func askedList(asked []Asked) string {
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

func slicesSortByLast(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int { return a.Last.Compare(b.Last) })
}

func sortRefusals(rs []RefusalCount) {
	slices.SortFunc(rs, func(a, b RefusalCount) int {
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

// ParseWhen reads a time as usage takes it: a date (2026-08-01), an
// RFC 3339 time, or a period before now (prune.ParsePeriod: 90d, 36h).
func ParseWhen(s string, now time.Time) (time.Time, error) {
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
