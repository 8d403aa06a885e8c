package oci

import (
	"fmt"
	"strings"

	"github.com/apparentlymart/go-versions/versions"
)

// ParseVersion parses a canonical semantic version (1.2.3, 2.0.0-rc1,
// 1.0.0+build.5) as OpenTofu does, and refuses anything whose canonical form
// differs from the input (v1.2.3, 1.2, 01.2.3), because OpenTofu resolves the
// tag of the canonical form: any other spelling would never be found.
func ParseVersion(s string) (versions.Version, error) {
	v, err := versions.ParseVersion(s)
	if err != nil {
		return versions.Unspecified, fmt.Errorf("invalid version %q: %w", s, err)
	}
	if v.String() != s {
		return versions.Unspecified, fmt.Errorf("version %q is not canonical: write %q", s, v.String())
	}
	return v, nil
}

// TagForVersion is the tag OpenTofu resolves for a version: its canonical
// string with '+' written as '_' (tags cannot hold '+').
func TagForVersion(v versions.Version) string {
	return strings.ReplaceAll(v.String(), "+", "_")
}

// VersionFromTag reports the version a tag stands for. Only canonical tags
// count: OpenTofu would parse "v1.2.3" in its tag listing but then resolve
// "1.2.3", so such tags are treated as not being versions at all.
func VersionFromTag(tag string) (versions.Version, bool) {
	v, err := versions.ParseVersion(strings.ReplaceAll(tag, "_", "+"))
	if err != nil || TagForVersion(v) != tag {
		return versions.Unspecified, false
	}
	return v, true
}

// ParseProtocolVersion checks a plugin protocol version ("5.0", "6").
func ParseProtocolVersion(s string) (versions.Version, error) {
	v, err := versions.ParseVersion(s)
	if err != nil || v.Major == 0 {
		return versions.Unspecified, fmt.Errorf("invalid plugin protocol version %q", s)
	}
	return v, nil
}

// Version is a semantic version as OpenTofu parses it.
type Version = versions.Version
