package lint

import (
	"encoding/json"
	"fmt"

	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Report prints the findings (with rep.JSON: with whether nothing
// failed) and, when any is an error, returns how many, saying what was
// checked (opts); "" when none is.
func Report(rep *report.Reporter, all []Finding, opts Options) (failure string) {
	failed := Errors(all)
	if rep.JSON {
		if all == nil {
			all = []Finding{}
		}
		b, _ := json.MarshalIndent(map[string]any{"ok": failed == 0, "findings": all}, "", "  ")
		fmt.Fprintln(rep.Out, string(b))
	} else if !rep.Quiet {
		for _, f := range all {
			fmt.Fprintf(rep.Out, "%-7s %s: %s\n", f.Severity, f.Reference, f.Message)
		}
	}
	switch problems := names.Plural(failed, "problem"); {
	case failed == 0:
		return ""
	case opts.Policy != nil:
		return problems + " (OpenTofu would fail on them, a signature or attestation is missing or does not verify, or the policy denies a version)"
	case len(opts.AttestKeys)+len(opts.Trusts)+len(opts.Keyless) > 0:
		return problems + " (OpenTofu would fail on them, or a signature or attestation is missing or does not verify)"
	}
	return names.Plural(failed, "problem") + " OpenTofu would fail on"
}
