package pullthrough

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Modules addressed under the proxy's own host name
// (PROXY/NAMESPACE/NAME/SYSTEM) are the organisation's private modules as
// much as anyone's: pulling them through from a public registry by name
// is dependency confusion (whoever owns the name there publishes a
// version, the proxy stores and serves it). So own-host pull-through is
// off unless Options.OwnModules names the addresses it may serve, and a
// wildcard pattern never reaches an address whose repository holds
// versions pull-through did not store (PulledThroughTag, written by every
// module pull before its version tag); only a pattern naming the address
// exactly does (docs/modules.md, "Modules under the proxy's own name").
// Providers pulled through the registry protocol (RegistryTarget) follow
// the wildcard rule, and provider pulls mark their repositories too. On
// every path, the network mirror's and the origins' own included, no pull
// stores into a repository holding pushed versions (pushed.go).

// PulledThroughTag marks a repository pull-through stores modules in: it
// names the first package pulled into it, and is written before that
// package's version tag. A repository holding versions without it holds
// modules someone pushed.
const PulledThroughTag = ingest.PulledThroughTag

// markPulledThrough tags root PulledThroughTag in repo unless the tag
// exists (provider pulls, before their version tag; module pulls write it
// in protocol/ingest). A failure is logged: the repository then reads
// as holding pushed versions, and pull-through stops adding to it under
// the proxy's own name (it fails closed).
func (e *Engine) markPulledThrough(ctx context.Context, repo oci.Repository, ref oci.Reference, root ocispec.Descriptor) {
	_, err := repo.Resolve(ctx, PulledThroughTag)
	if err == nil {
		return
	}
	if oci.IsNotFound(err) {
		err = repo.Tag(ctx, root, PulledThroughTag)
	}
	if err != nil {
		e.log.Warn("pull-through: could not mark the repository as pulled through; the proxy's own name will not pull into it", slog.String("repository", ref.Name()), slog.Any("error", err))
	}
}

// ModulePattern is an own-host module address pattern:
// NAMESPACE/NAME/SYSTEM, each segment a name or "*".
type ModulePattern struct {
	segments [3]string
}

// ParseModulePattern reads NAMESPACE/NAME/SYSTEM, each a module name
// segment or "*".
func ParseModulePattern(s string) (ModulePattern, error) {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(s)), "/")
	if len(parts) != 3 {
		return ModulePattern{}, fmt.Errorf("invalid module pattern %q: write NAMESPACE/NAME/SYSTEM (each a name or *)", s)
	}
	probe := make([]string, 3)
	for i, p := range parts {
		probe[i] = p
		if p == "*" {
			probe[i] = "x"
		}
	}
	if _, err := names.ParseModule(probe[0], probe[1], probe[2]); err != nil {
		return ModulePattern{}, fmt.Errorf("invalid module pattern %q: %w", s, err)
	}
	return ModulePattern{segments: [3]string(parts)}, nil
}

// Match reports whether the pattern covers mod.
func (p ModulePattern) Match(mod names.Module) bool {
	for i, seg := range []string{mod.Namespace, mod.Name, mod.System} {
		if p.segments[i] != "*" && p.segments[i] != seg {
			return false
		}
	}
	return true
}

// Exact reports whether the pattern names one address (no wildcard).
func (p ModulePattern) Exact() bool {
	for _, seg := range p.segments {
		if seg == "*" {
			return false
		}
	}
	return true
}

func (p ModulePattern) String() string { return strings.Join(p.segments[:], "/") }

// OwnModuleAccess is what own-host module pull-through may do for one
// address.
type OwnModuleAccess int

const (
	// OwnModuleHeldOnly: serve what the registry holds; ask no origin.
	OwnModuleHeldOnly OwnModuleAccess = iota
	// OwnModuleUnlessPushed: pull through, unless the registry holds
	// versions pull-through did not store (a wildcard pattern covers it).
	OwnModuleUnlessPushed
	// OwnModuleListed: pull through and merge with what is held (a
	// pattern names the address exactly).
	OwnModuleListed
)

// OwnModule says what pull-through may do for mod addressed under the
// proxy's own host name.
func (e *Engine) OwnModule(mod names.Module) OwnModuleAccess {
	if e == nil || len(e.opts.Modules) == 0 {
		return OwnModuleHeldOnly
	}
	access := OwnModuleHeldOnly
	for _, p := range e.opts.OwnModules {
		switch {
		case !p.Match(mod):
		case p.Exact():
			return OwnModuleListed
		default:
			access = OwnModuleUnlessPushed
		}
	}
	return access
}

// OwnModulePatterns are the own-host module patterns, as configured.
func (e *Engine) OwnModulePatterns() []string {
	if e == nil {
		return nil
	}
	out := make([]string, 0, len(e.opts.OwnModules))
	for _, p := range e.opts.OwnModules {
		out = append(out, p.String())
	}
	return out
}

// HoldsPushedVersions reports whether repo holds versions and lacks
// PulledThroughTag: the versions were pushed, and under the proxy's own
// hostname no origin is merged with them, pulled over them, or asked
// about them. A repository that does not exist holds none.
func HoldsPushedVersions(ctx context.Context, repo *store.Repo) (bool, error) {
	l, err := repo.Versions(ctx)
	switch {
	case store.FailureOf(err) == oci.FailureNotFound:
		return false, nil
	case err != nil:
		return false, err
	case len(l.Versions) == 0:
		return false, nil
	}
	marked, err := repo.HasTag(ctx, PulledThroughTag)
	return !marked, err
}

// CheckOwnHostname refuses pull-through (pt, nil: off) under the
// proxy's own name (--pull-through-registry-origin,
// --pull-through-own-modules) while the proxy does not know that name
// (known: --registry-hostname or --public-url, whose host Config.OwnHostname
// stores under): without either the request's Host, which the client
// chooses, would pick the repository an origin's release is written to.
func CheckOwnHostname(pt *Options, known bool) error {
	if pt == nil || known {
		return nil
	}
	var flags []string
	if pt.RegistryOrigin != "" {
		flags = append(flags, "--pull-through-registry-origin")
	}
	if len(pt.OwnModules) > 0 {
		flags = append(flags, "--pull-through-own-modules")
	}
	if len(flags) == 0 {
		return nil
	}
	return fmt.Errorf("%s pulls through under the proxy's own host name, and serve does not know it: give --registry-hostname HOST "+
		"(or --public-url https://HOST). Without either, the registry protocol's host name is each request's Host header, which the client chooses: "+
		"any Host would pick the repository an origin's release is stored in (docs/proxy.md, \"Pull-through\")", strings.Join(flags, " and "))
}
