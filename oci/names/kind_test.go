package names

import "testing"

func TestKindNoun(t *testing.T) {
	for k, want := range map[Kind]string{KindProvider: "provider", KindModule: "module", KindTofu: "OpenTofu release", "other": "other"} {
		if got := k.Noun(); got != want {
			t.Errorf("%q.Noun() = %q, want %q", k, got, want)
		}
	}
}
