package names

import (
	"cmp"
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

// PlatformOf is ParsePlatform(os + "_" + arch) when os holds no "_",
// without building the string: the platform, or false when either word
// is not a platform word (lower-case letters and digits, 1–32 of them).
func PlatformOf(os, arch string) (Platform, bool) {
	if validPlatformWord(os) && validPlatformWord(arch) {
		return Platform{OS: os, Arch: arch}, true
	}
	return Platform{}, false
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

// ComparePlatforms orders platforms by their string form ("os_arch"),
// without building it (a listing sorts tens of thousands of platforms).
func ComparePlatforms(a, b Platform) int {
	if a.OS == b.OS {
		return strings.Compare(a.Arch, b.Arch)
	}
	la, lb := len(a.OS)+1+len(a.Arch), len(b.OS)+1+len(b.Arch)
	for i := 0; i < min(la, lb); i++ {
		if c := cmpByte(platformByte(a, i), platformByte(b, i)); c != 0 {
			return c
		}
	}
	return cmp.Compare(la, lb)
}

// platformByte is the byte at i of p's string form.
func platformByte(p Platform, i int) byte {
	switch {
	case i < len(p.OS):
		return p.OS[i]
	case i == len(p.OS):
		return '_'
	}
	return p.Arch[i-len(p.OS)-1]
}

func cmpByte(x, y byte) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
