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
