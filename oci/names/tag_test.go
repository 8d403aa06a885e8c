package names

import (
	"strings"
	"testing"
)

func TestValidTag(t *testing.T) {
	for tag, want := range map[string]bool{
		"1.2.3": true, "1.2.3_build.1": true, "latest": true, "_x": true, strings.Repeat("a", 128): true,
		"": false, ".x": false, "-x": false, "1.2.3+build": false, "a/b": false, strings.Repeat("a", 129): false,
	} {
		if got := ValidTag(tag); got != want {
			t.Errorf("ValidTag(%q) = %v, want %v", tag, got, want)
		}
	}
}
