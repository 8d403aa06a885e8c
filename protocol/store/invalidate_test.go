package store

import "testing"

// A resolve cache key names its repository before the last colon ahead
// of the kind: a registry host's port is not taken for a tag.
func TestRepoOfTagKey(t *testing.T) {
	for key, want := range map[string]string{
		"localhost:5000/p/test/hello:1.0.0 provider": "localhost:5000/p/test/hello",
		"ghcr.io/acme/x:2.0.0 module":                "ghcr.io/acme/x",
		"nocolon kind":                               "",
	} {
		if got := repoOfTagKey(key); got != want {
			t.Errorf("%q: %q, want %q", key, got, want)
		}
	}
}
