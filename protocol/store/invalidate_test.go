package store

import (
	"slices"
	"testing"
)

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

// Invalidate reads each form of name: a repository drops its tag list
// and every tag's resolution, name:tag the list and that tag's, name:
// the list alone; other repositories keep theirs, and all drops every
// one.
func TestInvalidateForms(t *testing.T) {
	const a, b = "localhost:5000/p/a", "localhost:5000/p/b"
	fill := func() *Store {
		s := New(Options{})
		for _, repo := range []string{a, b} {
			s.tags.Add(repo, &tagList{}, 1)
			for _, tag := range []string{"1.0.0", "2.0.0"} {
				s.byTag.Add(repo+":"+tag+" provider", taggedManifest{}, 1)
			}
		}
		return s
	}
	kept := func(s *Store) (tags, byTag []string) {
		for _, repo := range []string{a, b} {
			if _, ok := s.tags.Peek(repo); ok {
				tags = append(tags, repo)
			}
			for _, tag := range []string{"1.0.0", "2.0.0"} {
				if _, ok := s.byTag.Peek(repo + ":" + tag + " provider"); ok {
					byTag = append(byTag, repo+":"+tag)
				}
			}
		}
		return tags, byTag
	}
	for _, c := range []struct {
		names       []string
		all         bool
		tags, byTag []string
	}{
		{names: []string{a}, tags: []string{b}, byTag: []string{b + ":1.0.0", b + ":2.0.0"}},
		{names: []string{a + ":1.0.0"}, tags: []string{b}, byTag: []string{a + ":2.0.0", b + ":1.0.0", b + ":2.0.0"}},
		{names: []string{a + ":"}, tags: []string{b}, byTag: []string{a + ":1.0.0", a + ":2.0.0", b + ":1.0.0", b + ":2.0.0"}},
		{all: true},
	} {
		s := fill()
		s.Invalidate(c.names, c.all)
		if tags, byTag := kept(s); !slices.Equal(tags, c.tags) || !slices.Equal(byTag, c.byTag) {
			t.Errorf("Invalidate(%q, %v) kept tag lists %v and resolutions %v, want %v and %v", c.names, c.all, tags, byTag, c.tags, c.byTag)
		}
	}
}
