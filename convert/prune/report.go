package prune

import (
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ReportVersion is one version in `prune --json`.
type ReportVersion struct {
	Version string   `json:"version"`
	Tag     string   `json:"tag"`
	Digest  string   `json:"digest"`
	Action  string   `json:"action"` // keep, delete, deleted, failed, not deleted
	Kept    []string `json:"kept_by,omitempty"`
	Bytes   int64    `json:"bytes,omitempty"`
	Deleted []string `json:"deleted,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// ReportRepository is one repository in `prune --json`.
type ReportRepository struct {
	Repository string          `json:"repository"`
	Kind       names.Kind      `json:"kind,omitempty"`
	Versions   []ReportVersion `json:"versions"`
}

// Report is what `prune` prints (--json: as it is): every version of
// every repository with its action, and the total.
type Report struct {
	Applied      bool               `json:"applied"`
	Repositories []ReportRepository `json:"repositories"`
	Versions     int                `json:"versions_to_delete"`
	Bytes        int64              `json:"bytes"`
	Warnings     []string           `json:"warnings,omitempty"`
}

// NewReport reports the plans, applied (Apply was run on them) or not,
// with the warnings about the rules; the text is its table and total.
func NewReport(plans []*Plan, warnings []string, applied bool) (Report, string) {
	res := Report{Applied: applied, Repositories: []ReportRepository{}, Warnings: warnings}
	var human strings.Builder
	for _, p := range plans {
		r := ReportRepository{Repository: p.Repository.Name, Kind: p.Repository.Kind, Versions: []ReportVersion{}}
		fmt.Fprintf(&human, "%s\n", p.Repository.Name)
		for _, e := range p.Versions {
			v := reportEntry(e, applied)
			r.Versions = append(r.Versions, v)
			fmt.Fprintf(&human, "  %-20s %-11s %10s  %s\n", v.Tag, v.Action, reportBytes(v), reportWhy(v))
		}
		if len(p.Versions) == 0 {
			human.WriteString("  (no version tags)\n")
		}
		n, b := p.Total()
		res.Versions += n
		res.Bytes += b
		res.Repositories = append(res.Repositories, r)
	}
	verb := "would be deleted (a dry run: nothing was deleted; --apply deletes)"
	if applied {
		verb = "deleted"
	}
	fmt.Fprintf(&human, "total: %s, %s %s", names.Plural(res.Versions, "version"), humanBytes(res.Bytes), verb)
	return res, human.String()
}

// reportEntry is a plan entry as reported: its action is what happened
// to it with --apply.
func reportEntry(e Entry, applied bool) ReportVersion {
	v := ReportVersion{Version: e.Version.Version.String(), Tag: e.Tag, Digest: e.Root.Digest.String(), Kept: e.Kept}
	for _, d := range e.Deleted {
		v.Deleted = append(v.Deleted, d.String())
	}
	switch {
	case !e.Goes():
		v.Action = "keep"
		return v
	case !applied:
		v.Action = "delete"
	case e.Err != nil:
		v.Action, v.Error = "failed", e.Err.Error()
	case len(e.Deleted) == len(e.Deletes):
		v.Action = "deleted"
	default:
		v.Action = "not deleted" // an earlier version's failure stopped prune
	}
	v.Bytes = e.Bytes
	return v
}

func reportBytes(v ReportVersion) string {
	if v.Action == "keep" {
		return ""
	}
	return humanBytes(v.Bytes)
}

// reportWhy is the table's last column: the rules keeping a version, or
// what happened to it.
func reportWhy(v ReportVersion) string {
	switch {
	case v.Action == "keep":
		return strings.Join(v.Kept, "; ")
	case v.Error != "":
		return fmt.Sprintf("after %s: %s", names.Plural(len(v.Deleted), "manifest"), v.Error)
	case v.Action == "deleted":
		return names.Plural(len(v.Deleted), "manifest") + " deleted"
	}
	return "no rule keeps it"
}

// humanBytes writes a size in binary units, exact below 1 KiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
