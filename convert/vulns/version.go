package vulns

import (
	"regexp"
	"strings"

	"golang.org/x/mod/semver"
)

// Pseudo-module paths the Go vulnerability database files the standard
// library and the go command under (govulncheck's names).
const (
	Stdlib    = "stdlib"
	Toolchain = "toolchain"
)

// canonical turns a version as the database writes it ("1.2.3", bare, as
// the OSV SEMVER type asks) or as a module or Go release may be written
// ("v1.2.3", "go1.2.3") into Go module semver ("v1.2.3"), as govulncheck
// does before comparing; "" when the result is not valid semver with a
// major, minor and patch number.
func canonical(v string) string {
	v = strings.TrimPrefix(v, "v")
	v = strings.TrimPrefix(v, "go")
	v = "v" + v
	// Full major.minor.patch: x/mod/semver also accepts the shorthands
	// v1 and v1.2, which no module version or database version is.
	core, _, _ := strings.Cut(strings.SplitN(v, "+", 2)[0], "-")
	if !semver.IsValid(v) || strings.Count(core, ".") != 2 {
		return ""
	}
	return v
}

// goTag matches a Go release tag: major.minor, an optional patch, and an
// optional prerelease (beta, rc, or the old -pre).
var goTag = regexp.MustCompile(`^go(\d+\.\d+)(\.\d+|)((beta|rc|-pre)(\d+))?$`)

// GoVersionToSemver turns a Go release as runtime.Version and the build
// information of binaries write it ("go1.22.1", "go1.21", "go1.22rc1",
// "go1.22.1 X:nocoverageredesign") into the semver the database's stdlib
// and toolchain ranges use ("v1.22.1", "v1.21.0", "v1.22.0-rc.1"), as
// govulncheck converts it; "" for a development build ("devel …") or
// anything else that is not a release.
func GoVersionToSemver(tag string) string {
	f := strings.Fields(tag)
	if len(f) == 0 {
		return ""
	}
	tag = f[0]
	switch tag {
	case "go1":
		return "v1.0.0"
	case "go1.0":
		return ""
	}
	m := goTag.FindStringSubmatch(tag)
	if m == nil {
		return ""
	}
	v := "v" + m[1]
	if m[2] != "" {
		v += m[2]
	} else {
		v += ".0"
	}
	if m[3] != "" {
		if !strings.HasPrefix(m[4], "-") {
			v += "-"
		}
		v += m[4] + "." + m[5]
	}
	if !semver.IsValid(v) {
		return ""
	}
	return v
}

// moduleVersion is the semver a module's version is compared as; "" when
// it cannot be compared: no version, "(devel)" (a main module built from
// its directory), or not semver. govulncheck reports no finding for such
// a module either.
func moduleVersion(path, version string) string {
	if version == "" || version == "(devel)" {
		return ""
	}
	if (path == Stdlib || path == Toolchain) && strings.HasPrefix(version, "go") {
		return GoVersionToSemver(version)
	}
	return canonical(version)
}

// compare compares canonical versions.
func compare(a, b string) int { return semver.Compare(a, b) }
