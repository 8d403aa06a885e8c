package names

import (
	"fmt"
	"strconv"
)

// tofuVersionRE is an OpenTofu release version as the TofuDL mirror
// specification (and tofudl's parser) accepts it.
var tofuVersionRE = lazyRegexp(`^(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})\.(0|[1-9][0-9]{0,8})(-(alpha|beta|rc)(0|[1-9][0-9]{0,8}))?$`)

// tofuArtifactRE is a release file name (tofudl's rule).
var tofuArtifactRE = lazyRegexp(`^[A-Za-z0-9._-]{1,255}$`)

// IsTofuVersion reports whether s is an OpenTofu release version as
// TofuDL writes them: MAJOR.MINOR.PATCH with an optional -alphaN, -betaN or
// -rcN.
func IsTofuVersion(s string) bool { return tofuVersionRE().MatchString(s) }

// ParseTofuVersion parses an OpenTofu release version as api.json lists it.
func ParseTofuVersion(s string) (Version, error) {
	if !IsTofuVersion(s) {
		return Version{}, fmt.Errorf("invalid OpenTofu version %q: want MAJOR.MINOR.PATCH with an optional -alphaN, -betaN or -rcN", s)
	}
	return ParseVersion(s)
}

// ValidTofuArtifact reports whether s is a plain release file name.
func ValidTofuArtifact(s string) bool {
	return tofuArtifactRE().MatchString(s) && s != "." && s != ".."
}

// TofuSHA256SUMSName is the checksum file of OpenTofu release v.
func TofuSHA256SUMSName(v string) string { return "tofu_" + v + "_SHA256SUMS" }

// CompareTofuVersions orders versions as TofuDL does: by major, minor,
// patch, then stable > rc > beta > alpha, then the pre-release number
// (so 1.10.0-rc10 is newer than 1.10.0-rc2). Both must be tofu versions.
func CompareTofuVersions(a, b string) int {
	pa, pb := tofuVersionParts(a), tofuVersionParts(b)
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func tofuVersionParts(s string) [5]int {
	m := tofuVersionRE().FindStringSubmatch(s)
	var p [5]int
	if m == nil {
		return p
	}
	for i := 0; i < 3; i++ {
		p[i], _ = strconv.Atoi(m[i+1])
	}
	p[3] = map[string]int{"": 0, "rc": -1, "beta": -2, "alpha": -3}[m[5]]
	if m[6] != "" {
		p[4], _ = strconv.Atoi(m[6])
	}
	return p
}
