package preflight

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Check statuses, from good to bad.
const (
	StatusOK      = "ok"
	StatusWarning = "warning"
	StatusError   = "error"
)

// TLSTarget is the Target of the server certificate's check.
const TLSTarget = "server TLS"

// Result is one check.
type Result struct {
	// Target is what was checked: "providers " and the mapping's Label,
	// "modules …", "OpenTofu releases …", TLSTarget.
	Target string `json:"target"`
	// Mapping is the template, repository or certificate file configured.
	Mapping string `json:"mapping,omitempty"`
	// Registry is the registry host (or OCI layout root) the mapping reaches.
	Registry string `json:"registry,omitempty"`
	// Credentials says whose, as oci.Client.CredentialsFrom tells, or
	// "anonymous".
	Credentials string `json:"credentials,omitempty"`
	// Repository is the sample repository looked for, if any.
	Repository string `json:"repository,omitempty"`
	Status     string `json:"status"`
	Detail     string `json:"detail"`
	Hint       string `json:"hint,omitempty"`
}

// Failed is the number of results with StatusError.
func Failed(results []Result) int {
	n := 0
	for _, r := range results {
		if r.Status == StatusError {
			n++
		}
	}
	return n
}

// WriteTable writes results as serve --check prints them: a table, then
// the hint of each result that has one.
func WriteTable(w io.Writer, results []Result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tWHAT\tREGISTRY\tCREDENTIALS\tDETAIL")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Status, r.Target, orDash(r.Registry), orDash(r.Credentials), r.Detail)
	}
	tw.Flush()
	for _, r := range results {
		if r.Hint != "" {
			fmt.Fprintf(w, "hint (%s): %s\n", r.Target, r.Hint)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
