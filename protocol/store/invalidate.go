package store

import "strings"

// Invalidate drops what the store cached of the named repositories
// (oci.Reference.Name, "host/path") that a tag push or delete can
// change: their tag lists and what their tags named, and fetches of them
// under way; all drops those of every repository. The held listings go
// too (a push may have created a repository). What is addressed by
// digest stays: it cannot change. It walks each cache once, however
// many repositories are named: callers batch (protocol/notify).
func (s *Store) Invalidate(names []string, all bool) {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	inRepo := func(key string) bool {
		if all {
			return true
		}
		return set[key] || set[repoOfTagKey(key)]
	}
	s.tags.ForgetMatching(inRepo)
	s.byTag.ForgetMatching(inRepo) // name:tag kind
	s.held.ForgetMatching(func(string) bool { return true })
}

// repoOfTagKey is the repository a resolve cache key (Repo.tagKey,
// "name:tag kind") is of; a registry host's port has a colon too, a tag
// none.
func repoOfTagKey(key string) string {
	nameTag, _, _ := strings.Cut(key, " ")
	if i := strings.LastIndexByte(nameTag, ':'); i > 0 {
		return nameTag[:i]
	}
	return ""
}
