package store

import "strings"

// Invalidate drops what the store cached that a tag push or delete can
// change, for each of names: a repository (oci.Reference.Name,
// "host/path") its tag list and what each of its tags named (a delete by
// digest may have removed any tag); "host/path:tag" the list and what
// that tag named (a tag pushed, moved or deleted); "host/path:" the list
// alone (a push by digest, which moves no tag). Fetches of these under
// way are dropped too; all drops those of every repository. The held
// listings go too (a push may have created a repository). What is
// addressed by digest stays: it cannot change. It walks each cache once,
// however many names there are: callers batch (protocol/notify).
func (s *Store) Invalidate(names []string, all bool) {
	listed := make(map[string]bool, len(names)) // repositories whose tag list goes
	whole := map[string]bool{}                  // and every tag's resolution
	tags := map[string]bool{}                   // name:tag resolutions
	for _, n := range names {
		name, tag, tagged := SplitName(n)
		listed[name] = true
		switch {
		case !tagged:
			whole[name] = true
		case tag != "":
			tags[n] = true
		}
	}
	s.tags.ForgetMatching(func(key string) bool { return all || listed[key] })
	resolved := func(key string) bool { // name:tag kind
		if all {
			return true
		}
		nameTag, _, _ := strings.Cut(key, " ")
		return tags[nameTag] || whole[repoOfTagKey(key)]
	}
	s.byTag.ForgetMatching(resolved)
	s.readAside.ForgetMatching(resolved) // a version index pushed anew is read aside again
	s.held.ForgetMatching(func(string) bool { return true })
}

// SplitName is an Invalidate name's repository and, after it, ":tag" or
// ":" (tagged false: the whole repository). A repository name's only
// colon is its host's port, before the first slash.
func SplitName(s string) (name, tag string, tagged bool) {
	slash := strings.IndexByte(s, '/')
	if slash < 0 {
		return s, "", false
	}
	if i := strings.IndexByte(s[slash:], ':'); i >= 0 {
		return s[:slash+i], s[slash+i+1:], true
	}
	return s, "", false
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
