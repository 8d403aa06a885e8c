package names

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/apparentlymart/go-versions/versions/constraints"
)

// Constraints are version constraints ("~> 1.0, >= 1.0.2"), all of which
// must hold.
type Constraints = constraints.IntersectionSpec

// maxConstraintsLen bounds the constraint strings we parse.
const maxConstraintsLen = 4096

// ParseConstraints parses version constraints as OpenTofu does
// ("~> 1.0, >= 1.0.2", "1.2.3", "!= 2.0.0"); an empty string is no
// constraint.
func ParseConstraints(s string) (Constraints, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if len(s) > maxConstraintsLen {
		return nil, fmt.Errorf("invalid version constraint: longer than %d bytes", maxConstraintsLen)
	}
	if err := checkNumbers(s); err != nil {
		return nil, fmt.Errorf("invalid version constraint %q: %w", s, err)
	}
	c, err := constraints.ParseRubyStyleMulti(s)
	if err != nil {
		return nil, fmt.Errorf("invalid version constraint %q: %w", s, err)
	}
	return c, nil
}

// ConstraintsString renders constraints in the normalised form OpenTofu
// writes into the "constraints" attribute of a lock file: duplicates
// removed, ordered by boundary then operator, boundaries written in full
// (minor-only "~> 1.2" keeps two parts). Writing the same form means tofu
// init finds nothing to change.
func ConstraintsString(spec Constraints) string {
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
		switch {
		case !vi.Same(vj):
			return vi.LessThan(vj)
		case vi.Metadata.Raw() != vj.Metadata.Raw():
			// OpenTofu orders equal boundaries by build metadata, only
			// to have some order.
			return vi.Metadata.LessThan(vj.Metadata)
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

func boundaryVersion(v constraints.VersionSpec) Version {
	v = v.ConstrainToZero()
	return Version{
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

// allowed is the set of versions constraints admit: every release when
// there are none; pre-releases only when named exactly, as in OpenTofu.
func allowed(spec Constraints) versions.Set {
	if len(spec) == 0 {
		return versions.Released
	}
	return versions.MeetingConstraints(spec)
}

// Admits reports whether v meets the constraints as OpenTofu reads them.
func Admits(spec Constraints, v Version) bool { return allowed(spec).Has(v) }

// VersionSet is a set of versions, as constraints describe them.
type VersionSet = versions.Set

// Admitting is the set of versions spec admits (Admits), built once for
// callers that ask about many versions.
func Admitting(spec Constraints) VersionSet { return allowed(spec) }

// SelectVersion chooses as OpenTofu's provider installer does: the locked
// version when it still meets the constraints (and is still available),
// otherwise the newest available version meeting them (pre-releases only
// when named exactly). Errors say what tofu init would say.
func SelectVersion(available VersionList, spec Constraints, locked *Version) (Version, error) {
	set := allowed(spec)
	if locked != nil {
		if !set.Has(*locked) {
			return versions.Unspecified, fmt.Errorf("locked provider version %s does not match the configured version constraint %q; tofu init would refuse too (upgrade deliberately with tofu init -upgrade, or remove the entry from the lock file)", locked, ConstraintsString(spec))
		}
		set = versions.Only(*locked)
	}
	if set.Exactly(versions.Unspecified) {
		return versions.Unspecified, fmt.Errorf("0.0.0 is not a valid provider version")
	}
	v := available.NewestInSet(set)
	if v == versions.Unspecified {
		if locked != nil {
			return v, fmt.Errorf("the previously-selected version %s is no longer available", locked)
		}
		return v, fmt.Errorf("no available releases match the given constraints %q (available: %s)", ConstraintsString(spec), available)
	}
	return v, nil
}

// MatchingVersions returns every version of list meeting the constraints
// (all released versions when there are none), oldest first.
func MatchingVersions(list VersionList, spec Constraints) VersionList {
	set := allowed(spec)
	var out VersionList
	for _, v := range list {
		if set.Has(v) {
			out = append(out, v)
		}
	}
	out.Sort()
	return out
}
