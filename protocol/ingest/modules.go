package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/modulesource"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// ModuleTarget is where a module version fetched from its origin goes.
type ModuleTarget struct {
	Client *oci.Client
	Ref    oci.Reference
	// TempDir holds the package being packed (default os.TempDir()).
	TempDir string
	// Attest, when set, signs and attests the package stored.
	Attest *Attestation
	// BeforeWrite, when set, is asked once the package is packed, before
	// anything is written to the repository; an error stops the store.
	BeforeWrite func(ctx context.Context) error
}

// StoreModule resolves version v of mod at f's origin registry (raw is
// the version as the origin writes it), fetches its source, packs the
// tree exactly as `push module` packs it and pushes it to the target
// with its interface (moduledoc.Push: stored before the tag), tagged
// last; with Attest, the attestation records the origin, the
// source URL and the git commit. A tree failing the package checks is
// refused (modulesource.ErrRefused).
func StoreModule(ctx context.Context, f *modulesource.Fetcher, mod names.Module, raw string, v names.Version, t ModuleTarget) (oci.PushResult, error) {
	src, err := f.Resolve(ctx, mod, raw)
	if err != nil {
		return oci.PushResult{}, err
	}
	fetched, err := f.Fetch(ctx, src)
	if err != nil {
		return oci.PushResult{}, err
	}
	defer fetched.Remove()
	tags := []string{names.TagForVersion(v)}
	target := modulepkg.Target{Client: t.Client, Ref: t.Ref, Tags: tags}
	pkg, err := modulepkg.Prepare(ctx, fetched.Dir, target, modulepkg.Options{TempDir: t.TempDir, Charge: fetched.Charge})
	if err != nil {
		return oci.PushResult{}, treeError(ctx, src, err)
	}
	defer pkg.Remove()
	if t.BeforeWrite != nil {
		if err := t.BeforeWrite(ctx); err != nil {
			return oci.PushResult{}, err
		}
	}
	if err := markPulledThrough(ctx, t, pkg); err != nil {
		return oci.PushResult{}, err
	}
	res, err := moduledoc.Push(ctx, pkg, target, moduledoc.PushOptions{})
	if err != nil || t.Attest == nil || t.Attest.Attester == nil {
		return res, err
	}
	repo, err := t.Client.Open(t.Ref)
	if err != nil {
		return res, err
	}
	from := modulepkg.SourcePredicate{Path: src.String(), Origin: fetched.Origin, URL: src.String(), Commit: fetched.Commit}
	return res, t.Attest.Module(ctx, repo, t.Ref.Name(), pkg, tags, res.Root, from)
}

// PulledThroughTag marks a repository module pull-through stores into:
// it names the first package pulled into it and is written before that
// package's version tag, so a repository holding versions without it
// holds only modules someone pushed (pullthrough's own-host rule).
const PulledThroughTag = "oci-tofu.pulled-through"

// markPulledThrough tags pkg PulledThroughTag in the target repository
// unless the tag exists; another pull writing it at the same moment is
// no failure.
func markPulledThrough(ctx context.Context, t ModuleTarget, pkg *modulepkg.Package) error {
	if marked, err := hasTag(ctx, t, PulledThroughTag); err != nil || marked {
		return err
	}
	marker := modulepkg.Target{Client: t.Client, Ref: t.Ref, Tags: []string{PulledThroughTag}}
	if _, err := pkg.Push(ctx, marker, oci.PushOptions{}); err != nil {
		if marked, _ := hasTag(ctx, t, PulledThroughTag); !marked {
			return fmt.Errorf("marking %s as pulled through: %w", t.Ref.Name(), err)
		}
	}
	return nil
}

// hasTag reports whether the target repository has tag (a repository
// that does not exist yet has none).
func hasTag(ctx context.Context, t ModuleTarget, tag string) (bool, error) {
	repo, err := t.Client.OpenReadOnly(ctx, t.Ref)
	if oci.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, err = repo.Resolve(ctx, tag)
	if oci.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// treeError is why a fetched tree was not packed: refused for what it
// holds (the package checks and bounds), or stopped by the temporary-disk
// budget or the context, which say nothing of the tree.
func treeError(ctx context.Context, src modulesource.Source, err error) error {
	if errors.Is(err, modulesource.ErrBusy) || ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("packing the module tree from %s: %w", src, err)
	}
	return fmt.Errorf("%w: the module tree from %s: %w", modulesource.ErrRefused, src, err)
}

// ModuleSpec is a module to mirror: HOST/NAMESPACE/NAME/SYSTEM, the
// versions wanted, and whether only the newest of them is (what `tofu
// init` would install for a module call).
type ModuleSpec struct {
	Host        string
	Module      names.Module
	Constraints names.Constraints
	Newest      bool
}

func (s ModuleSpec) String() string { return s.Host + "/" + s.Module.String() }

// policyAddress is the module's address as the policy file matches
// it: its host without a port, as for providers (policy.ProviderAddress).
func (s ModuleSpec) policyAddress() string {
	return strings.ToLower(names.HostWithoutPort(s.Host) + "/" + s.Module.String())
}

// ModuleOptions say where mirrored modules go and which hosts their
// sources may come from.
type ModuleOptions struct {
	// Template maps a module address (its origin's hostname included) to
	// a repository.
	Template *repotemplate.Template
	Client   *oci.Client
	// Sources are the hosts module sources may be fetched from, besides
	// each module's registry.
	Sources   []string
	Transport http.RoundTripper
	TempDir   string
	Attest    *Attestation
	// Gate, when set, leaves out the versions the policy file denies
	// (kind module, address HOST/NAMESPACE/NAME/SYSTEM) before anything of
	// them is fetched.
	Gate Gate
	Log  func(format string, args ...any)
}

// Modules copies module versions from their origin registries into OCI,
// one package per version as `push module` makes it; versions whose tag
// already holds a module package are skipped without fetching. A failure
// is reported in its result and does not stop the others.
func Modules(ctx context.Context, specs []ModuleSpec, opts ModuleOptions) []Result {
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	fetchers := map[string]*modulesource.Fetcher{}
	var results []Result
	for _, spec := range specs {
		f, ok := fetchers[spec.Host]
		if !ok {
			var err error
			f, err = modulesource.New(modulesource.Config{Registry: spec.Host, Sources: opts.Sources, Transport: opts.Transport, TempDir: opts.TempDir})
			if err != nil {
				results = append(results, Result{Module: spec.String(), Error: err.Error()})
				continue
			}
			fetchers[spec.Host] = f
		}
		results = append(results, mirrorModule(ctx, f, spec, opts)...)
	}
	return results
}

func mirrorModule(ctx context.Context, f *modulesource.Fetcher, spec ModuleSpec, opts ModuleOptions) []Result {
	fail := func(err error) []Result {
		opts.Log("%s: %v", spec, err)
		return []Result{{Module: spec.String(), Error: err.Error()}}
	}
	ref, err := opts.Template.Expand(spec.Module.TemplateValues(spec.Host))
	if err != nil {
		return fail(err)
	}
	chosen, raw, results, err := moduleVersions(ctx, f, spec, opts.Gate)
	if err != nil {
		return fail(err)
	}
	for _, v := range chosen {
		r := Result{Module: spec.String(), Version: v.String(), Reference: ref.WithReference(names.TagForVersion(v)).String(),
			Warnings: opts.Gate.warnings(names.KindModule, spec.policyAddress(), v)}
		res, err := storeIfMissing(ctx, f, spec.Module, raw[v.String()], v, ModuleTarget{Client: opts.Client, Ref: ref, TempDir: opts.TempDir, Attest: opts.Attest})
		if err != nil {
			r.Reference, r.Error = "", err.Error()
			opts.Log("%s %s: %v", spec, v, err)
		} else {
			r.Digest, r.Skipped, r.Attested = res.Root.Digest.String(), res.UpToDate, !res.UpToDate && opts.Attest != nil
			opts.Log("%s %s → %s", spec, v, map[bool]string{true: "already held", false: r.Reference}[res.UpToDate])
		}
		results = append(results, r)
	}
	return results
}

// moduleVersions lists the versions of spec to mirror among those the
// gate allows, how the origin writes each, and the results of those the
// gate denies that would have been taken without it.
func moduleVersions(ctx context.Context, f *modulesource.Fetcher, spec ModuleSpec, g Gate) (names.VersionList, map[string]string, []Result, error) {
	offered, err := f.Versions(ctx, spec.Module)
	if err != nil {
		return nil, nil, nil, err
	}
	raw := map[string]string{}
	var available, allowed names.VersionList
	for _, s := range offered {
		if v, err := names.ParseVersion(s); err == nil {
			raw[v.String()] = s
			available = append(available, v)
			if g.refuses(names.KindModule, spec.policyAddress(), v) == nil {
				allowed = append(allowed, v)
			}
		}
	}
	pick := func(l names.VersionList) names.VersionList {
		chosen := names.MatchingVersions(l, spec.Constraints)
		if spec.Newest && len(chosen) > 0 {
			chosen = names.VersionList{chosen.Newest()}
		}
		return chosen
	}
	chosen := pick(allowed)
	var denied []Result
	for _, v := range pick(available) {
		if err := g.refuses(names.KindModule, spec.policyAddress(), v); err != nil && !slices.ContainsFunc(chosen, v.Same) {
			denied = append(denied, Result{Module: spec.String(), Version: v.String(), Denied: err.Error()})
		}
	}
	if len(chosen) == 0 && len(denied) == 0 {
		return nil, nil, nil, fmt.Errorf("no version matches %q (the origin offers %d): %w", names.ConstraintsString(spec.Constraints), len(available), origin.ErrNotFound)
	}
	return chosen, raw, denied, nil
}

// storeIfMissing stores version v unless its tag already holds a module
// package (reported UpToDate, nothing fetched).
func storeIfMissing(ctx context.Context, f *modulesource.Fetcher, mod names.Module, raw string, v names.Version, t ModuleTarget) (oci.PushResult, error) {
	if repo, err := t.Client.OpenReadOnly(ctx, t.Ref); err == nil {
		if root, _, err := oci.ResolveModule(ctx, repo, names.TagForVersion(v)); err == nil {
			return oci.PushResult{Root: root, UpToDate: true}, nil
		}
	}
	return StoreModule(ctx, f, mod, raw, v, t)
}
