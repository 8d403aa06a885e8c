package pullthrough

import (
	"sort"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// recentlyStored remembers the versions pull-through stored lately, by
// repository, so listings include them before the registry's (cached) tag
// list does, also while the origin is down.
type recentlyStored struct {
	ttl time.Duration
	max int
	mu  sync.Mutex
	m   map[string]map[string]StoredVersion // repository → version
	n   int
}

// StoredVersion is a version pull-through stored: for the registry
// protocol, its listing entry; for the TofuDL mirror, its files.
type StoredVersion struct {
	Version  names.Version
	Registry *wire.RegistryVersion
	Files    []string
	// Root is the digest of the provider release's index as stored, to
	// be read back by its digest while a cached "not found" of its tag
	// lasts.
	Root  digest.Digest
	until time.Time
}

func newRecentlyStored(ttl time.Duration, max int) *recentlyStored {
	return &recentlyStored{ttl: ttl, max: max, m: map[string]map[string]StoredVersion{}}
}

func (r *recentlyStored) add(repo string, sv StoredVersion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	if r.n >= r.max {
		r.pruneLocked(now)
	}
	if r.n >= r.max {
		return
	}
	if r.m[repo] == nil {
		r.m[repo] = map[string]StoredVersion{}
	}
	if _, ok := r.m[repo][sv.Version.String()]; !ok {
		r.n++
	}
	sv.until = now.Add(r.ttl)
	r.m[repo][sv.Version.String()] = sv
}

func (r *recentlyStored) pruneLocked(now time.Time) {
	for repo, vs := range r.m {
		for k, sv := range vs {
			if now.After(sv.until) {
				delete(vs, k)
				r.n--
			}
		}
		if len(vs) == 0 {
			delete(r.m, repo)
		}
	}
}

// list returns the versions stored lately in repo, oldest version first.
func (r *recentlyStored) list(repo string) []StoredVersion {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	var out []StoredVersion
	for _, sv := range r.m[repo] {
		if now.Before(sv.until) {
			out = append(out, sv)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version.LessThan(out[j].Version) })
	return out
}

// Recent lists the versions pull-through stored lately in the repository
// named repo (oci.Reference.Name), before the registry's cached tag list
// may show them.
func (e *Engine) Recent(repo string) []StoredVersion {
	if e == nil {
		return nil
	}
	return e.recent.list(repo)
}
