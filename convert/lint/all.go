package lint

import (
	"context"
	"fmt"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// CheckAll checks each reference as Check does (`oci-tofu verify`), its
// repository opened with open; the policy, when set, matches each by the
// address its repository path names (policy.AddressFromRepository). Not
// reaching the registry stops it, the error naming the reference: that
// says nothing about the artifacts. A content problem is an error finding.
func CheckAll(ctx context.Context, open func(context.Context, oci.Reference) (oci.ReadOnlyRepository, error), refs []oci.Reference, opts Options) ([]Finding, error) {
	var all []Finding
	for _, ref := range refs {
		opts.PolicyAddress = func(kind names.Kind) (string, error) { return policy.AddressFromRepository(kind, ref.Repository) }
		repo, err := open(ctx, ref)
		var findings []Finding
		if err == nil {
			findings, err = Check(ctx, repo, ref, opts)
		}
		if err != nil && !oci.IsContentProblem(err) {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		if err != nil {
			findings = append(findings, Finding{Reference: ref.String(), Severity: SeverityError, Message: err.Error()})
		}
		all = append(all, findings...)
	}
	return all, nil
}

// Errors counts the findings that are errors.
func Errors(findings []Finding) int {
	n := 0
	for _, f := range findings {
		if f.Severity == SeverityError {
			n++
		}
	}
	return n
}
