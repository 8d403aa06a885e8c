package names

import (
	"fmt"
	"strings"

	"github.com/apparentlymart/go-versions/versions"
)

// Version is a semantic version as OpenTofu parses it.
type Version = versions.Version

// VersionList is a list of versions.
type VersionList = versions.List

// maxVersionLen bounds the version strings we parse.
const maxVersionLen = 128

// parseSemver is versions.ParseVersion made safe for any input: go-versions
// panics on numbers that do not fit in 64 bits, so those are refused
// before it sees them.
func parseSemver(s string) (Version, error) {
	if len(s) > maxVersionLen {
		return versions.Unspecified, fmt.Errorf("longer than %d bytes", maxVersionLen)
	}
	if err := checkNumbers(s); err != nil {
		return versions.Unspecified, err
	}
	return versions.ParseVersion(s)
}

// checkNumbers refuses runs of digits that overflow uint64 (go-versions
// parses every number of a version or constraint with a panicking
// strconv.ParseUint). Runs of 19 digits or fewer always fit.
func checkNumbers(s string) error {
	run := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			run++
			continue
		}
		if run > 19 && !fitsUint64(s[i-run:i]) {
			return fmt.Errorf("number %s is too large", s[i-run:i])
		}
		run = 0
	}
	return nil
}

func fitsUint64(digits string) bool {
	digits = strings.TrimLeft(digits, "0")
	const max = "18446744073709551615"
	return len(digits) < len(max) || len(digits) == len(max) && digits <= max
}

// ParseVersion parses a canonical semantic version (1.2.3, 2.0.0-rc1,
// 1.0.0+build.5) as OpenTofu does, and refuses anything whose canonical form
// differs from the input (v1.2.3, 1.2, 01.2.3), because OpenTofu resolves the
// tag of the canonical form: any other spelling would never be found.
func ParseVersion(s string) (Version, error) {
	v, err := ParseVersionLoose(s)
	if err != nil {
		return versions.Unspecified, err
	}
	if v.String() != s {
		return versions.Unspecified, fmt.Errorf("version %q is not canonical: write %q", s, v.String())
	}
	return v, nil
}

// ParseVersionLoose parses a version in any spelling go-versions accepts
// (1.2 is 1.2.0), as OpenTofu reads versions from lock files and from tags.
func ParseVersionLoose(s string) (Version, error) {
	v, err := parseSemver(s)
	if err != nil {
		return versions.Unspecified, fmt.Errorf("invalid version %q: %w", s, err)
	}
	return v, nil
}

// TagForVersion is the tag OpenTofu resolves for a version: its canonical
// string with '+' written as '_' (tags cannot hold '+').
func TagForVersion(v Version) string {
	return strings.ReplaceAll(v.String(), "+", "_")
}

// VersionFromTag reports the version a tag stands for. Only canonical tags
// count: OpenTofu would parse "v1.2.3" in its tag listing but then resolve
// "1.2.3", so such tags are treated as not being versions at all.
func VersionFromTag(tag string) (Version, bool) {
	if v, ok := ListedVersion(tag); ok && TagForVersion(v) == tag {
		return v, true
	}
	return versions.Unspecified, false
}

// ParseProtocolVersion checks a plugin protocol version ("5.0", "6").
func ParseProtocolVersion(s string) (Version, error) {
	v, err := parseSemver(s)
	if err != nil || v.Major == 0 {
		return versions.Unspecified, fmt.Errorf("invalid plugin protocol version %q", s)
	}
	return v, nil
}

// ListedVersion is the version OpenTofu's oci_mirror reads a tag as when it
// lists a repository: the tag with '_' as '+', parsed leniently, so "1.2"
// stands for 1.2.0 while "v1.2.3" and "latest" stand for nothing. A tag
// whose listed version has another canonical tag (1.2 → 1.2.0) is still
// listed, and OpenTofu then fails to resolve it: see CanonicalTag.
func ListedVersion(tag string) (Version, bool) {
	v, err := parseSemver(strings.ReplaceAll(tag, "_", "+"))
	if err != nil {
		return versions.Unspecified, false
	}
	return v, true
}

// CanonicalTag reports whether tag is the tag OpenTofu resolves for the
// version it lists it as.
func CanonicalTag(tag string) bool {
	_, ok := VersionFromTag(tag)
	return ok
}

// MustParseVersion is ParseVersion for constants known to be valid; it
// panics otherwise.
func MustParseVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}
