package proxy

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// The registry decides (Options.RegistryDecides; docs/proxy.md, "The
// registry decides"): a client's bearer token is its credential for the
// registry, USERNAME:PASSWORD as docker login takes it (a Harbor robot
// account, a GHCR user and token). Before anything is served to it for
// an address, cached or not, the registry is asked whether those
// credentials may read the address's repository (oci.Client.CanRead,
// with a token cache of its own); the answer is kept per credential and
// repository for a bounded time. What the proxy reads and caches, and
// what pull-through writes, it reads and writes with its own credential.

// errRegistryToken is the 401 of a token that is no registry credential.
var errRegistryToken = errors.New("the registry decides who reads what here: the bearer token is your registry credential, USERNAME:PASSWORD as docker login takes it")

// registryCredential splits a bearer token into the registry user name
// and password it carries.
func registryCredential(token string) (user, password string, ok bool) {
	user, password, ok = strings.Cut(token, ":")
	return user, password, ok && user != "" && password != ""
}

// registryID is a client the registry decides for.
type registryID struct {
	s              *Server
	user, password string
	key            [sha256.Size]byte // the token's sha256: what confirmations are kept by
}

// Reads asks the registry, or its recent answer, whether id may read the
// repository address maps to.
func (id *registryID) Reads(ctx context.Context, kind names.Kind, address string) error {
	ref, err := id.s.repositoryOf(kind, address)
	if err != nil {
		return source.NotFoundf("%s %s: %v", kind, address, err)
	}
	err = id.s.confirmed.check(ctx, id, ref)
	switch oci.Classify(err) {
	case oci.FailureNone:
		return nil
	case oci.FailureUnauthorized, oci.FailureDenied:
		return source.NotFoundf("%s %s: the registry does not let user %s read it", kind, address, id.user)
	}
	return err
}

// repositoryOf is the repository address (of kind) maps to: a provider's
// first mapping admitting it, a module's first template, the OpenTofu
// repository.
func (s *Server) repositoryOf(kind names.Kind, address string) (oci.Reference, error) {
	switch kind {
	case names.KindProvider:
		p, err := names.ParseProvider(address)
		if err != nil {
			return oci.Reference{}, err
		}
		return s.mappings.Map(p)
	case names.KindModule:
		parts := strings.Split(address, "/")
		if len(parts) != 4 || len(s.opts.ModuleMappings) == 0 {
			return oci.Reference{}, fmt.Errorf("no module template maps %s", address)
		}
		m := names.Module{Namespace: parts[1], Name: parts[2], System: parts[3]}
		return s.opts.ModuleMappings[0].Expand(m.TemplateValues(parts[0]))
	case names.KindTofu:
		if s.opts.TofuRepository != nil {
			return *s.opts.TofuRepository, nil
		}
	}
	return oci.Reference{}, fmt.Errorf("nothing maps %s %s", kind, address)
}

// confirmations keeps the registry's answers on whether a credential
// may read a repository: yes for RegistryConfirmTTL, no (or no answer)
// for a tenth of it; at most maxConfirmations: when full, the expired
// answers are dropped, then others until a tenth is free.
type confirmations struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[confirmKey]confirmed
	n   atomic.Int64 // registry asks, for tests and logs
}

const maxConfirmations = 100000

type confirmKey struct {
	cred [sha256.Size]byte
	repo string
}

type confirmed struct {
	err   error
	until time.Time
}

// check is the registry's answer for id and ref, asked when none is
// kept.
func (c *confirmations) check(ctx context.Context, id *registryID, ref oci.Reference) error {
	k := confirmKey{id.key, ref.Name()}
	now := time.Now()
	c.mu.Lock()
	got, ok := c.m[k]
	c.mu.Unlock()
	if ok && now.Before(got.until) {
		return got.err
	}
	c.n.Add(1)
	err := id.s.client.CanRead(ctx, ref, id.user, id.password)
	if ctx.Err() != nil {
		return err // the client gave up: nothing learned
	}
	ttl := c.ttl
	if err != nil {
		ttl /= 10
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxConfirmations {
		c.makeRoom(now)
	}
	c.m[k] = confirmed{err: err, until: now.Add(ttl)}
	return err
}

// makeRoom drops the expired answers, then others, until a tenth of
// the bound is free (c.mu held).
func (c *confirmations) makeRoom(now time.Time) {
	maps.DeleteFunc(c.m, func(_ confirmKey, v confirmed) bool { return now.After(v.until) })
	for key := range c.m {
		if len(c.m) < maxConfirmations*9/10 {
			return
		}
		delete(c.m, key)
	}
}
