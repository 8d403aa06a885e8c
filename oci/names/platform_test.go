package names

import (
	"strings"
	"testing"
)

// ComparePlatforms orders as the platforms' string forms do, without
// building them: every pair of OSes and architectures from words that
// meet and straddle the "_" (shorter, longer, digits and "_" below and
// above it).
func TestComparePlatformsIsStringOrder(t *testing.T) {
	words := []string{"", "a", "a1", "a_", "linux", "linuxx", "linux1", "b", "z9", "0", "_", "a0b"}
	for _, o1 := range words {
		for _, a1 := range words {
			for _, o2 := range words {
				for _, a2 := range words {
					p, q := Platform{o1, a1}, Platform{o2, a2}
					if got, want := ComparePlatforms(p, q), strings.Compare(p.String(), q.String()); got != want {
						t.Fatalf("ComparePlatforms(%q, %q) = %d, want %d", p, q, got, want)
					}
				}
			}
		}
	}
}

// PlatformOf decides as ParsePlatform does on the joined name, for every
// pair whose OS has no "_" (the pairs an index's platform fields make).
func TestPlatformOfAgreesWithParsePlatform(t *testing.T) {
	words := []string{"", "linux", "amd64", "Linux", "arm_64", "x86-64", "a/b", "..", "386", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "é"}
	for _, os := range words {
		for _, arch := range words {
			got, ok := PlatformOf(os, arch)
			want, err := ParsePlatform(os + "_" + arch)
			wantOK := err == nil && want.OS == os
			if strings.Contains(os, "_") {
				wantOK = false
			}
			if ok != wantOK || ok && got != want {
				t.Errorf("PlatformOf(%q, %q) = %v, %v; ParsePlatform of the joined name: %v, %v", os, arch, got, ok, want, err)
			}
		}
	}
}
