package pullthrough

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/modulesource"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// Modules reports whether modules are pulled through.
func (e *Engine) Modules() bool { return e != nil && e.opts.Modules != nil }

// ModuleOrigin is the origin registry modules are pulled from.
func (e *Engine) ModuleOrigin() string { return e.opts.Modules.Registry() }

// ModuleOffered lists the versions the origin offers of mod (cached like
// provider listings; versions that do not parse are left out).
func (e *Engine) ModuleOffered(ctx context.Context, mod names.Module) (map[string]string, time.Time, error) {
	res, err := e.moduleListings.Get(ctx, mod.String(), func(ctx context.Context) (map[string]string, int64, error) {
		raw, err := e.opts.Modules.Versions(ctx, mod)
		if err != nil {
			e.reportOriginError("module", mod.String(), err)
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
		return nil, res.Fetched, originError(e.opts.Modules.Registry(), err)
	}
	return res.Val, res.Fetched, nil
}

// modulePull is one module version being fetched and stored; every
// request for it waits for the same one.
type modulePull struct {
	done   chan struct{}
	cancel context.CancelFunc
	res    Stored
	err    error
}

// ModulePullKey names the pull of version v into the repository named repo.
func ModulePullKey(repo string, v names.Version) string {
	return "module " + repo + " " + v.String()
}

// PullModule makes sure version v of mod (as the origin names it) is
// stored in ref, fetching it from the origin when no pull of it ran
// lately: one fetch however many requests ask at once, its failure
// remembered for FailureTTL. The pull outlives ctx, which only bounds the
// wait.
func (e *Engine) PullModule(ctx context.Context, ref oci.Reference, mod names.Module, v names.Version) (Stored, error) {
	key := ModulePullKey(ref.Name(), v)
	if res, ok := e.completed.Peek(key); ok {
		return res, nil
	}
	if err := e.remembered(ctx, "module", key, e.opts.Modules.Registry()); err != nil {
		return Stored{}, err
	}
	p, err := e.startModule(key, ref, mod, v)
	if err != nil {
		return Stored{}, err
	}
	select {
	case <-p.done:
		return p.res, p.err
	case <-ctx.Done():
		return Stored{}, ctx.Err()
	}
}

func (e *Engine) startModule(key string, ref oci.Reference, mod names.Module, v names.Version) (*modulePull, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.modulePulls[key]; ok {
		return p, nil
	}
	if len(e.inflight)+len(e.modulePulls) >= e.opts.MaxPulls {
		return nil, &Error{Failure: FailureBusy, RetryAfter: 5,
			Msg: fmt.Sprintf("the proxy is already pulling %d releases from their origins; try again shortly", len(e.inflight)+len(e.modulePulls))}
	}
	p := &modulePull{done: make(chan struct{})}
	e.modulePulls[key] = p
	e.metrics.inflight.Inc()
	e.running.Add(1)
	go func() {
		defer e.running.Done()
		e.runModule(key, p, ref, mod, v)
	}()
	return p, nil
}

// runModule fetches, packs, pushes (and attests) one module version.
func (e *Engine) runModule(key string, p *modulePull, ref oci.Reference, mod names.Module, v names.Version) {
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.Timeout)
	defer cancel()
	e.mu.Lock()
	p.cancel = cancel
	e.mu.Unlock()
	start := time.Now()
	attrs := []slog.Attr{slog.String("kind", "module"), slog.String("module", mod.String()), slog.String("version", v.String()),
		slog.String("origin", e.opts.Modules.Registry()), slog.String("repository", ref.Name())}
	e.log.LogAttrs(ctx, slog.LevelInfo, "pull-through: fetching a module from its origin", attrs...)
	p.res, p.err = e.storeModule(ctx, ref, mod, v)
	attrs = append(attrs, slog.Duration("duration", time.Since(start)))
	if p.err == nil {
		e.completed.Add(key, p.res, 1024)
		e.recent.add(ref.Name(), StoredVersion{Version: v})
		e.metrics.result("module", "stored")
		e.log.LogAttrs(ctx, slog.LevelInfo, "pull-through: module fetched, packed and stored", append(attrs, slog.String("digest", p.res.Root.Digest.String()))...)
	} else {
		kind := Classify(p.err)
		p.err = moduleError(e.opts.Modules.Registry(), p.err)
		e.failures.Add(key, p.err, 0)
		e.metrics.result("module", kind)
		e.log.LogAttrs(ctx, slog.LevelWarn, "pull-through: module not stored", append(attrs, slog.String("failure", kind), slog.Any("error", p.err))...)
	}
	e.mu.Lock()
	delete(e.modulePulls, key)
	e.metrics.inflight.Dec()
	e.mu.Unlock()
	close(p.done)
}

// storeModule finds how the origin writes v, then resolves, fetches,
// packs and pushes it (ingest.StoreModule), tagged last.
func (e *Engine) storeModule(ctx context.Context, ref oci.Reference, mod names.Module, v names.Version) (Stored, error) {
	offered, _, err := e.ModuleOffered(ctx, mod)
	if err != nil {
		return Stored{}, err
	}
	raw, ok := offered[v.String()]
	if !ok {
		return Stored{}, fmt.Errorf("module %s %s: %w", mod, v, origin.ErrNotFound)
	}
	res, err := ingest.StoreModule(ctx, e.opts.Modules, mod, raw, v, ingest.ModuleTarget{Client: e.registry, Ref: ref, TempDir: e.opts.TempDir, Attest: e.opts.Attest})
	if err != nil {
		return Stored{}, err
	}
	return Stored{Root: res.Root}, nil
}

// moduleError is what a request sees when a module could not be pulled.
func moduleError(host string, err error) error {
	if errors.Is(err, modulesource.ErrRefused) {
		return &Error{Failure: FailureRefused, Err: err,
			Msg: fmt.Sprintf("not held by the registry, and what origin %s offers was refused (a source outside the allowed hosts, or a tree that fails the module package checks)", host)}
	}
	return originError(host, err)
}
