package held

import (
	"sync"

	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// maxRepos bounds a repoCache: past it the cache starts again empty,
// so addresses nobody holds, asked in a flood, cost memory only up to it.
const maxRepos = 16384

// repoCache remembers the repository a template maps each module
// address to (a store.Repo is a name and never changes), sparing a
// catalogue search the template's expansion for every module it reads.
type repoCache struct {
	mu    sync.RWMutex
	repos map[source.ModuleAddress]*store.Repo
}

func (c *repoCache) get(a source.ModuleAddress) (*store.Repo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	repo, ok := c.repos[a]
	return repo, ok
}

func (c *repoCache) put(a source.ModuleAddress, repo *store.Repo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.repos == nil || len(c.repos) >= maxRepos {
		c.repos = make(map[source.ModuleAddress]*store.Repo)
	}
	c.repos[a] = repo
}
