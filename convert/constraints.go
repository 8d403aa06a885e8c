package convert

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/apparentlymart/go-versions/versions/constraints"
)

// ConstraintsString renders constraints in the normalised form OpenTofu
// writes into the "constraints" attribute of a lock file: duplicates
// removed, ordered by boundary then operator, boundaries written in full
// (minor-only "~> 1.2" keeps two parts). Writing the same form means tofu
// init finds nothing to change.
func ConstraintsString(spec constraints.IntersectionSpec) string {
	seen := map[constraints.SelectionSpec]bool{}
	var sels []constraints.SelectionSpec
	for _, s := range spec {
		n := constraints.SelectionSpec{Operator: s.Operator, Boundary: s.Boundary.ConstrainToZero()}
		if !seen[n] {
			seen[n] = true
			sels = append(sels, n)
		}
	}
	sort.Slice(sels, func(i, j int) bool {
		vi, vj := boundaryVersion(sels[i].Boundary), boundaryVersion(sels[j].Boundary)
		if !vi.Same(vj) {
			return vi.LessThan(vj)
		}
		return opRank[sels[i].Operator] < opRank[sels[j].Operator]
	})
	var b strings.Builder
	for i, s := range sels {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(opText[s.Operator])
		if s.Operator == constraints.OpGreaterThanOrEqualMinorOnly {
			fmt.Fprintf(&b, "%s.%s", s.Boundary.Major, s.Boundary.Minor)
		} else {
			fmt.Fprintf(&b, "%s.%s.%s", s.Boundary.Major, s.Boundary.Minor, s.Boundary.Patch)
		}
		if s.Boundary.Prerelease != "" {
			b.WriteString("-" + s.Boundary.Prerelease)
		}
		if s.Boundary.Metadata != "" {
			b.WriteString("+" + s.Boundary.Metadata)
		}
	}
	return b.String()
}

func boundaryVersion(v constraints.VersionSpec) versions.Version {
	v = v.ConstrainToZero()
	return versions.Version{
		Major: v.Major.Num, Minor: v.Minor.Num, Patch: v.Patch.Num,
		Prerelease: versions.VersionExtra(v.Prerelease), Metadata: versions.VersionExtra(v.Metadata),
	}
}

var opRank = map[constraints.SelectionOp]int{
	constraints.OpGreaterThan:                 1,
	constraints.OpGreaterThanOrEqual:          2,
	constraints.OpEqual:                       3,
	constraints.OpGreaterThanOrEqualPatchOnly: 4,
	constraints.OpGreaterThanOrEqualMinorOnly: 5,
	constraints.OpLessThanOrEqual:             6,
	constraints.OpLessThan:                    7,
	constraints.OpNotEqual:                    8,
}

var opText = map[constraints.SelectionOp]string{
	constraints.OpGreaterThan:                 "> ",
	constraints.OpLessThan:                    "< ",
	constraints.OpGreaterThanOrEqual:          ">= ",
	constraints.OpGreaterThanOrEqualPatchOnly: "~> ",
	constraints.OpGreaterThanOrEqualMinorOnly: "~> ",
	constraints.OpLessThanOrEqual:             "<= ",
	constraints.OpEqual:                       "",
	constraints.OpNotEqual:                    "!= ",
}

// SelectVersion chooses as OpenTofu does: the locked version when it still
// meets the constraints, otherwise the newest available version meeting
// them (pre-releases only when named exactly).
func SelectVersion(available versions.List, spec constraints.IntersectionSpec, locked *versions.Version) (versions.Version, error) {
	allowed := versions.Released
	if len(spec) > 0 {
		allowed = versions.MeetingConstraints(spec)
	}
	if locked != nil {
		if !allowed.Has(*locked) {
			return versions.Unspecified, fmt.Errorf("locked version %s does not match the constraints %q (tofu init would refuse too; upgrade deliberately)", locked, ConstraintsString(spec))
		}
		for _, v := range available {
			if v.Same(*locked) {
				return v, nil
			}
		}
		return versions.Unspecified, fmt.Errorf("locked version %s is not available", locked)
	}
	v := available.NewestInSet(allowed)
	if v == versions.Unspecified {
		return v, fmt.Errorf("no available version matches %q (available: %s)", ConstraintsString(spec), available)
	}
	return v, nil
}
