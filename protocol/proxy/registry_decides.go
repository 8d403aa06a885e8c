package proxy

import (
	"cmp"
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
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/logins"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// The registry decides (Options.RegistryDecides; docs/proxy.md, "The
// registry decides"): a client's bearer token is its credential for the
// registry, USERNAME:PASSWORD as docker login takes it (a Harbor robot
// account, a GHCR user and token). Before anything is served to it for
// an address, cached or not, the registry is asked whether those
// credentials may read every repository the address maps to that holds
// versions of it (repositoriesOf; oci.Client.CanRead, with a token cache
// of its own; only a listing confirms); the answer is kept per
// credential and repository for a bounded time, and the logins it takes
// are bounded (protocol/proxy/logins). What the proxy reads and caches, and
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
	s *Server
	logins.Login
	password string
}

// Reads asks the registry, or its recent answers, whether id may read
// every repository address maps to that holds something for it
// (repositoriesOf): each version the merged sources serve comes from
// one of them. The first refusal is the answer.
func (id *registryID) Reads(ctx context.Context, kind names.Kind, address string) error {
	if err := id.s.logins.Screen(id.Login); err != nil {
		return id.refusal(kind, address, err)
	}
	refs, err := id.s.repositoriesOf(ctx, kind, address)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if err := id.confirm(ctx, kind, address, ref); err != nil {
			return err
		}
	}
	return nil
}

// confirm is the registry's word, or its recent one, on whether id may
// read ref: nil when it listed ref to id's credentials; the 404 an
// absent artifact gets when it refused them or said ref does not exist
// to them (which confirms nothing: registries answer so for what a
// credential may not see); other failures as they are.
func (id *registryID) confirm(ctx context.Context, kind names.Kind, address string, ref oci.Reference) error {
	err := id.s.confirmed.check(ctx, id, ref)
	if err == nil {
		return nil
	}
	return id.refusal(kind, address, err)
}

// refusal is the answer to id for address when the registry refused, or
// would not be asked (logins.ErrCoolingDown): the 404 an absent artifact gets,
// the same whatever the password; err itself otherwise (a 429, a
// registry failing).
func (id *registryID) refusal(kind names.Kind, address string, err error) error {
	if errors.Is(err, logins.ErrCoolingDown) || logins.AnsweredAbout(err) {
		return source.NotFoundf("%s %s: the registry does not let user %s read it", kind, address, id.User)
	}
	return err
}

// Caller is id as the audit trail names it (respond.Verified: asked
// again once Reads has answered): a registry user, verified when the
// registry accepted the credential (logins.Guard.Accepted), unverified
// (a name a token claims) otherwise.
func (id *registryID) Caller() audit.Caller {
	if id.s.logins.Accepted(id.Key) {
		return audit.Caller{Client: id.User, Identity: audit.IdentityRegistry}
	}
	return audit.Caller{Client: id.User, Identity: audit.IdentityRegistryUnverified}
}

// Vouched reports whether the registry accepted id's credential
// (respond.Vouched).
func (id *registryID) Vouched() bool { return id.s.logins.Accepted(id.Key) }

// repositoriesOf are the repositories the registry must confirm for
// address (of kind): of those it maps to (mappedRepositories), the ones
// the proxy, with its own credential and through the store's caches,
// sees holding versions; the first alone when none does (what
// pull-through would create, or nothing at all). A NotFound when
// nothing maps address; a registry failure as it is.
func (s *Server) repositoriesOf(ctx context.Context, kind names.Kind, address string) ([]oci.Reference, error) {
	refs, err := s.mappedRepositories(kind, address)
	if err != nil {
		return nil, source.NotFoundf("%s %s: %v", kind, address, err)
	}
	if len(refs) == 1 {
		return refs, nil
	}
	var holding []oci.Reference
	for _, ref := range refs {
		held, err := s.holdsVersions(ctx, ref)
		if err != nil {
			return nil, err
		}
		if held {
			holding = append(holding, ref)
		}
	}
	if len(holding) == 0 {
		return refs[:1], nil
	}
	return holding, nil
}

// holdsVersions reports whether ref's tags, as the store reads them
// (cached, with the proxy's credential), name versions; a repository
// that does not exist holds none.
func (s *Server) holdsVersions(ctx context.Context, ref oci.Reference) (bool, error) {
	l, err := s.store.Repo(ref).Versions(ctx)
	switch {
	case store.RepoMissing(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return len(l.Versions) > 0, nil
}

// mappedRepositories are the repositories address (of kind) maps to, in
// the order the merged sources read them: a provider's every mapping
// covering it, a module's every template, the OpenTofu repository.
func (s *Server) mappedRepositories(kind names.Kind, address string) ([]oci.Reference, error) {
	switch kind {
	case names.KindProvider:
		return s.providerRepositories(address)
	case names.KindModule:
		return s.moduleRepositories(address)
	case names.KindTofu:
		if s.opts.TofuRepository != nil {
			return []oci.Reference{*s.opts.TofuRepository}, nil
		}
	}
	return nil, fmt.Errorf("nothing maps %s %s", kind, address)
}

// providerRepositories are the repositories of the mappings covering
// provider address, in order.
func (s *Server) providerRepositories(address string) ([]oci.Reference, error) {
	p, err := names.ParseProvider(address)
	if err != nil {
		return nil, err
	}
	var refs []oci.Reference
	for _, mp := range s.mappings {
		if ref, err := (store.ProviderMappings{mp}).Map(p); err == nil {
			refs = append(refs, ref)
		}
	}
	if len(refs) == 0 {
		_, err := s.mappings.Map(p) // its error says why
		return nil, cmp.Or(err, fmt.Errorf("nothing maps provider %s", address))
	}
	return refs, nil
}

// moduleRepositories are the repositories the module templates give
// module address (host/namespace/name/system), in order.
func (s *Server) moduleRepositories(address string) ([]oci.Reference, error) {
	parts := strings.Split(address, "/")
	if len(parts) != 4 || len(s.opts.ModuleMappings) == 0 {
		return nil, fmt.Errorf("no module template maps %s", address)
	}
	m, err := names.ParseModule(parts[1], parts[2], parts[3])
	if err != nil {
		return nil, err
	}
	var refs []oci.Reference
	for _, tpl := range s.opts.ModuleMappings {
		if ref, err := tpl.Expand(m.TemplateValues(parts[0])); err == nil {
			refs = append(refs, ref)
		}
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("no module template maps %s", address)
	}
	return refs, nil
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
	k := confirmKey{id.Key, ref.Name()}
	now := time.Now()
	c.mu.Lock()
	got, ok := c.m[k]
	c.mu.Unlock()
	if ok && now.Before(got.until) {
		return got.err
	}
	if err := id.s.logins.Permit(id.Login); err != nil {
		return err
	}
	defer id.s.logins.Landed(id.Login)
	c.n.Add(1)
	took, err := id.s.client.CanReadAs(ctx, ref, id.User, id.password)
	if ctx.Err() != nil {
		return err // the client gave up: nothing learned
	}
	id.s.logins.Learn(id.Login, took, err)
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
