package names

import (
	"fmt"
	"strings"
)

// Platform is an OpenTofu target platform: Go's OS and architecture names.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "_" + p.Arch }

// ParsePlatform reads "os_arch", both lower-case letters and digits.
func ParsePlatform(s string) (Platform, error) {
	for i := 0; i < len(s); i++ {
		if s[i] == '_' {
			p := Platform{OS: s[:i], Arch: s[i+1:]}
			if validPlatformWord(p.OS) && validPlatformWord(p.Arch) {
				return p, nil
			}
			break
		}
	}
	return Platform{}, fmt.Errorf("invalid platform %q: want os_arch, e.g. linux_amd64", s)
}

func validPlatformWord(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ComparePlatforms orders platforms by their string form.
func ComparePlatforms(a, b Platform) int {
	return strings.Compare(a.String(), b.String())
}
