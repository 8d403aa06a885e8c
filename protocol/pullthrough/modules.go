package pullthrough

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/modulesource"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// Modules reports whether modules are pulled through.
func (e *Engine) Modules() bool { return e != nil && len(e.opts.Modules) > 0 }

// ModuleOrigins are the origin module registries by hostname, in the
// order configured.
func (e *Engine) ModuleOrigins() []string {
	if e == nil {
		return nil
	}
	out := make([]string, 0, len(e.opts.Modules))
	for _, f := range e.opts.Modules {
		out = append(out, f.Registry())
	}
	return out
}

// OwnModulesUnder reports whether own modules pull through under host,
// the registry protocol's host name of a request (without
// --registry-hostname its Host, which the client chooses): only the
// proxy's own (OwnHost), and no module origin's but ModuleOrigin's.
func (e *Engine) OwnModulesUnder(host string) bool {
	return e.OwnHost(host) && !e.anotherModuleOriginsHost(host)
}

// anotherModuleOriginsHost reports whether host, the own modules' host
// name, is a module origin's other than ModuleOrigin: the first
// origin's modules would be stored in, and served on /v1/origins/ from,
// that origin's repositories.
func (e *Engine) anotherModuleOriginsHost(host string) bool {
	origins := e.ModuleOrigins()
	if len(origins) < 2 {
		return false
	}
	for _, o := range origins[1:] {
		if strings.EqualFold(o, host) && !strings.EqualFold(o, e.ModuleOrigin()) {
			return true
		}
	}
	return false
}

// ModuleOrigin is the origin of the modules addressed under the proxy's
// own hostname: the first of ModuleOrigins.
func (e *Engine) ModuleOrigin() string { return e.opts.Modules[0].Registry() }

// moduleFetcher is the fetcher of origin registry host.
func (e *Engine) moduleFetcher(host string) (*modulesource.Fetcher, error) {
	for _, f := range e.opts.Modules {
		if f.Registry() == host {
			return f, nil
		}
	}
	return nil, fmt.Errorf("pull-through: %s is not an origin module registry of this proxy", host)
}

// ModuleOffered lists the versions origin registry host offers of mod
// (cached like provider listings; versions that do not parse are left
// out).
func (e *Engine) ModuleOffered(ctx context.Context, host string, mod names.Module) (map[string]string, time.Time, error) {
	f, err := e.moduleFetcher(host)
	if err != nil {
		return nil, time.Time{}, err
	}
	res, err := e.moduleListings.Get(ctx, host+"/"+mod.String(), func(ctx context.Context) (map[string]string, int64, error) {
		raw, err := f.Versions(ctx, mod)
		if err != nil {
			e.reportOriginError(names.KindModule, host+"/"+mod.String(), err)
			return nil, 0, err
		}
		out := map[string]string{} // canonical version → as the origin writes it
		for _, r := range raw {
			if v, err := names.ParseVersion(r); err == nil {
				out[v.String()] = r
			}
		}
		return out, int64(256 + 32*len(out)), nil
	})
	if err != nil {
		return nil, res.Fetched, originError(host, err)
	}
	return res.Val, res.Fetched, nil
}

// ModulePullKey names the pull of version v into the repository named
// repo: one pull per tag, whichever origin it comes from.
func ModulePullKey(repo string, v names.Version) string {
	return "module " + repo + " " + v.String()
}

// moduleFailKey names a module version of an origin in the failure
// memory.
func moduleFailKey(host string, mod names.Module, v names.Version) string {
	return "module " + host + "/" + mod.String() + " " + v.String()
}

// PullModule makes sure version v of mod, as origin registry host names
// it, is stored in ref, fetching it when no pull of it ran lately: one
// fetch however many requests ask at once, on this replica and, sharing
// state, on the others (the engine's pulls and leases, engine.go and
// shared.go); a failure is remembered for FailureTTL. The pull outlives
// ctx, which only bounds the wait.
func (e *Engine) PullModule(ctx context.Context, host string, ref oci.Reference, mod names.Module, v names.Version) (Stored, error) {
	f, err := e.moduleFetcher(host)
	if err != nil {
		return Stored{}, err
	}
	key, failKey := ModulePullKey(ref.Name(), v), moduleFailKey(host, mod, v)
	dst := e.ModuleDestination(host, ref, mod)
	if res, ok := e.completed.Peek(key); ok {
		return res, nil
	}
	if err := e.remembered(ctx, names.KindModule, failKey, host); err != nil {
		return Stored{}, err
	}
	for range 2 { // a second round after a shared record the registry did not confirm
		p, _, err := e.start(ctx, names.KindModule, key, failKey, host, &dst, func() (*Pull, error) { return e.newModulePull(f, key, failKey, dst, mod, v) }, "", true)
		switch {
		case errors.Is(err, ErrFinished):
			if res, ok := e.storedModule(ctx, key, ref, v); ok {
				return res, nil
			}
			continue
		case err != nil:
			return Stored{}, err
		}
		select {
		case <-p.done:
			return p.res, p.err
		case <-ctx.Done():
			return Stored{}, ctx.Err()
		}
	}
	return Stored{}, &Error{Failure: FailureBusy, RetryAfter: 5, Msg: "the module version is being stored by the proxy; try again shortly"}
}

// storedModule is what the pull under key stored: this replica's record,
// or, when another replica recorded it, what the version's tag names in
// the registry now (the shared record only says when to look; a tag
// that names no module package sets the record aside).
func (e *Engine) storedModule(ctx context.Context, key string, ref oci.Reference, v names.Version) (Stored, bool) {
	res, ok := e.Completed(ctx, key)
	if !ok || !res.Shared {
		return res, ok
	}
	repo, err := e.registry.OpenReadOnly(ctx, ref)
	if err == nil {
		var manifest ocispec.Descriptor
		if manifest, _, err = oci.ResolveModule(ctx, repo, names.TagForVersion(v)); err == nil {
			return Stored{Root: manifest, Shared: true}, true
		}
	}
	e.log.Warn("pull-through: the shared cache says a module version is stored, the registry does not confirm it; set aside",
		slog.String("repository", ref.Name()), slog.String("version", v.String()), slog.Any("error", err))
	e.Distrust(key)
	return Stored{}, false
}

// newModulePull prepares the pull of one module version: no files to
// download, its finish resolves, fetches, packs and pushes the module
// (and attests it), tagged last.
func (e *Engine) newModulePull(f *modulesource.Fetcher, key, failKey string, dst Destination, mod names.Module, v names.Version) (*Pull, error) {
	ref := dst.Ref
	p, err := e.newPull(names.KindModule, key, f.Registry()+"/"+mod.String()+" "+v.String(), nil, nil, func(string) error { return nil })
	if err != nil {
		return nil, err
	}
	p.failKey = failKey
	p.ingested = &events.VersionIngested{Kind: events.KindModule, Address: f.Registry() + "/" + mod.String(), Version: v.String(), Via: events.ViaPullThrough, Repository: ref.Name()}
	p.attrs = []any{slog.String("module", mod.String()), slog.String("version", v.String()),
		slog.String("origin", f.Registry()), slog.String("repository", ref.Name())}
	p.finish = func(ctx context.Context, dir string) (Stored, error) {
		res, err := e.storeModule(ctx, f, dst, mod, v, dir)
		if err != nil {
			return Stored{}, moduleError(f.Registry(), err)
		}
		e.recent.add(ref.Name(), StoredVersion{Version: v})
		return res, nil
	}
	return p, nil
}

// storeModule finds how the origin writes v, then resolves, fetches,
// packs and pushes it (ingest.StoreModule) with its work below dir,
// tagged last, once guard has found no version pushed to dst meanwhile.
func (e *Engine) storeModule(ctx context.Context, f *modulesource.Fetcher, dst Destination, mod names.Module, v names.Version, dir string) (Stored, error) {
	offered, _, err := e.ModuleOffered(ctx, f.Registry(), mod)
	if err != nil {
		return Stored{}, err
	}
	raw, ok := offered[v.String()]
	if !ok {
		return Stored{}, fmt.Errorf("module %s %s: %w", mod, v, origin.ErrNotFound)
	}
	res, err := ingest.StoreModule(ctx, f, mod, raw, v, ingest.ModuleTarget{Client: e.registry, Ref: dst.Ref, TempDir: dir, Attest: e.opts.Attest,
		BeforeWrite: func(ctx context.Context) error { return e.guard(ctx, &dst) }})
	if err != nil {
		return Stored{}, err
	}
	return Stored{Root: res.Root}, nil
}

// moduleError is what a request sees when a module could not be pulled.
func moduleError(host string, err error) error {
	if errors.Is(err, modulesource.ErrBusy) {
		return &Error{Failure: FailureBusy, RetryAfter: 5, Err: err,
			Msg: "the proxy's module fetches in progress hold their whole temporary disk; try again shortly"}
	}
	if errors.Is(err, modulesource.ErrRefused) {
		return &Error{Failure: FailureRefused, Err: err, Msg: failureMessage(host, FailureRefused)}
	}
	return originError(host, err)
}
