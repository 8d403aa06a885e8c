package proxy

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// The merged view of several module mappings (Options.ModuleTemplate,
// then MoreModuleTemplates), as mergedProviders (merged.go) is for
// providers and as OpenTofu merges its oci_mirror blocks: a module's
// versions are those of every mapping that admits its address; each
// version is served from the first mapping, in order, that serves it. A
// mapping holding nothing of the module or of the version (404) is passed
// over; any other failure of a mapping's registry is the answer, so an
// outage never turns into another mapping's copy or a shorter list. With
// pull-through, the first mapping lists what its origin offers too (an
// origin outage lists what the mappings hold, as with one mapping), and
// a version no mapping holds is pulled into the first mapping
// (docs/proxy.md "Modules and OpenTofu releases", docs/modules.md).

// moduleRepos are a module's repositories in the mappings that admit its
// address, in order; pulled is set when the first of them is the first
// mapping's, the one pull-through lists from and stores into.
type moduleRepos struct {
	repos  []*store.Repo
	pulled bool
}

// reposOf are the repositories of mod in the mappings that admit it (404
// naming the first mapping's reason when none does).
func (m *modules) reposOf(host string, mod names.Module) (moduleRepos, error) {
	var out moduleRepos
	var first error
	for i, tpl := range m.templates {
		ref, err := tpl.Expand(mod.TemplateValues(host))
		if err != nil {
			if first == nil {
				first = source.NotFoundf("module %s has no repository here: %v", mod, err)
			}
			continue
		}
		if len(out.repos) == 0 {
			out.pulled = i == 0 && m.pulls
		}
		out.repos = append(out.repos, m.s.store.Repo(ref))
	}
	if len(out.repos) == 0 {
		return out, first
	}
	return out, nil
}

// sourceOf is the moduleSource of mr's i-th repository: the first
// mapping's may pull through, the others serve what they hold.
func (m *modules) sourceOf(mr moduleRepos, i int) moduleSource {
	if i == 0 && mr.pulled {
		return m.src
	}
	return m.held
}

// versionsDoc lists the versions of every mapping that serves some of
// mod, and logs a version two of them hold with different packages.
func (m *modules) versionsDoc(ctx context.Context, mr moduleRepos, host string, mod names.Module) (any, time.Time, error) {
	if len(mr.repos) == 1 {
		return m.sourceOf(mr, 0).versionsDoc(ctx, mr.repos[0], host, mod)
	}
	vs := map[string]names.Version{}
	listedBy := map[string][]*store.Repo{}
	var at time.Time
	var absent, outage error
	for i, repo := range mr.repos {
		d, vat, err := m.sourceOf(mr, i).versionsDoc(ctx, repo, host, mod)
		switch {
		case err != nil && absentHere(err):
			absent = cmp.Or(absent, err)
			continue
		case err != nil && i == 0 && mr.pulled && originFailed(err):
			outage = err
			continue
		case err != nil:
			return nil, vat, err
		}
		at = earliestNonZero(at, vat)
		for _, lv := range d.(wire.ModuleVersions).Modules[0].Versions {
			if v, err := names.ParseVersion(lv.Version); err == nil {
				vs[v.String()] = v
				listedBy[v.String()] = append(listedBy[v.String()], repo)
			}
		}
	}
	if len(vs) == 0 {
		return nil, at, cmp.Or(outage, absent)
	}
	if p, ok := m.src.(*pulledModules); ok && outage != nil { // outage is only ever the pulling mapping's
		p.engine.DegradedListing("module", p.origin+"/"+mod.String(), outage)
	}
	m.logShadowed(ctx, mod, vs, listedBy)
	return versionsOf(vs), at, nil // pulled_modules.go
}

// absentHere says a mapping has nothing of what is asked: its registry
// does not hold it (404) and, for the first mapping with pull-through,
// its origin does not offer it either.
func absentHere(err error) bool {
	var pe *pullthrough.Error
	return source.Absent(err) || errors.As(err, &pe) && pe.Failure == pullthrough.FailureNotFound
}

// originFailed says the first mapping's listing with pull-through failed
// at the origin (the mapping's registry holding nothing of the module):
// merged, the other mappings' versions are listed, as the held ones are
// with one mapping when its origin fails (pulled_modules.go), and the
// outage is logged and counted.
func originFailed(err error) bool {
	var pe *pullthrough.Error
	return errors.As(err, &pe)
}

// logShadowed logs each version more than one mapping lists whose tags
// name different zips: the first mapping's is served, the others are
// shadowed. Only what the listings already resolved is compared (the
// store caches it); a tag that cannot be read is not a conflict here.
func (m *modules) logShadowed(ctx context.Context, mod names.Module, vs map[string]names.Version, listedBy map[string][]*store.Repo) {
	for key, repos := range listedBy {
		if len(repos) < 2 {
			continue
		}
		tag := names.TagForVersion(vs[key])
		_, served, err := repos[0].Module(ctx, tag)
		if err != nil {
			continue
		}
		for _, other := range repos[1:] {
			if _, zip, err := other.Module(ctx, tag); err == nil && zip.Digest != served.Digest {
				m.s.log.LogAttrs(ctx, slog.LevelInfo, "module version shadowed: an earlier mapping holds another package of it, and serves it",
					slog.String("module", mod.String()), slog.String("version", key),
					slog.String("served_from", repos[0].Name()), slog.String("shadowed", other.Name()))
			}
		}
	}
}

// release is version v's package in the first mapping serving it; with
// pull-through, when no mapping holds it at all, the one pulled into the
// first mapping. When none serves it, the answer is the first refusal of
// a copy a mapping holds (the policy's, the attestation rule's), or else
// the first mapping's "no such version".
func (m *modules) release(ctx context.Context, mr moduleRepos, host string, mod names.Module, v names.Version) (ocispec.Descriptor, error) {
	if len(mr.repos) == 1 {
		return m.sourceOf(mr, 0).release(ctx, mr.repos[0], host, mod, v)
	}
	var absent, refused error
	for _, repo := range mr.repos {
		d, err := m.held.release(ctx, repo, host, mod, v)
		switch {
		case err == nil || !source.Absent(err):
			return d, err
		case source.IsNotHeld(err):
			absent = cmp.Or(absent, err)
		default:
			refused = cmp.Or(refused, err)
		}
	}
	if refused != nil {
		return ocispec.Descriptor{}, refused
	}
	if mr.pulled {
		return m.src.release(ctx, mr.repos[0], host, mod, v)
	}
	return ocispec.Descriptor{}, absent
}

// releaseAt is the zip of the package with that manifest digest in the
// first mapping holding it (the one a download answer named), with that
// mapping's repository.
func (m *modules) releaseAt(ctx context.Context, mr moduleRepos, host string, mod names.Module, v names.Version, manifest digest.Digest) (ocispec.Descriptor, *store.Repo, error) {
	var first error
	for _, repo := range mr.repos {
		zip, err := m.held.releaseAt(ctx, repo, host, mod, v, manifest)
		if err == nil || !source.Absent(err) {
			return zip, repo, err
		}
		first = cmp.Or(first, err)
	}
	return ocispec.Descriptor{}, nil, first
}

// ModuleTemplates are the module mappings in order: ModuleTemplate, then
// MoreModuleTemplates (none without a ModuleTemplate).
func (o *Options) ModuleTemplates() []*oci.Template {
	if o.ModuleTemplate == nil {
		return nil
	}
	return append([]*oci.Template{o.ModuleTemplate}, o.MoreModuleTemplates...)
}
