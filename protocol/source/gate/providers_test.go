package gate_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
)

// providerJudge denies the versions and roots it is told to, and counts.
type providerJudge struct {
	deniedVersions map[string]bool
	refusedRoots   map[digest.Digest]bool
}

func (j providerJudge) Versions(kind names.Kind, address, what string, vs []names.Version) gate.Verdicts {
	out := gate.Verdicts{Denied: map[string]error{}}
	for _, v := range vs {
		if err := j.Version(kind, address, what, v); err != nil {
			out.Denied[v.String()] = err
		}
	}
	return out
}

func (j providerJudge) Version(kind names.Kind, address, what string, v names.Version) error {
	if j.deniedVersions[v.String()] {
		return &source.Denied{Msg: what + " " + v.String() + " is not served: denied", Rule: "r", Reason: "denied"}
	}
	return nil
}

func (j providerJudge) ReadsRoot(kind names.Kind, address string, attested bool) bool {
	return attested
}

func (j providerJudge) Facts(ctx context.Context, kind names.Kind, address, what string, v names.Version, root source.Root) (string, error) {
	return "", nil
}

func (j providerJudge) Attested(ctx context.Context, kind names.Kind, what string, v names.Version, root source.Root, attested bool) error {
	if attested && j.refusedRoots[root.Digest] {
		return &source.Denied{Msg: what + " " + v.String() + " is not served: not attested", Reason: "not attested"}
	}
	return nil
}

func (j providerJudge) Platform(p names.Provider, v names.Version, pl names.Platform) error {
	return nil
}

func (j providerJudge) PullsOnlyStored(kind names.Kind, address string) bool { return false }

// heldProviders holds versions, each stored at the digest of its name.
type heldProviders struct {
	mu       sync.Mutex
	versions []string
	resolved []string
}

func rootOf(v string) digest.Digest { return digest.FromString(v) }

func (h *heldProviders) ProviderVersions(ctx context.Context, p names.Provider, via names.Via, opts source.ListOptions) (source.ProviderListing, error) {
	var l source.ProviderListing
	for _, v := range h.versions {
		l.Versions = append(l.Versions, source.Listed{Version: names.MustParseVersion(v), Stored: true})
	}
	return l, nil
}

func (h *heldProviders) ResolveProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	h.mu.Lock()
	h.resolved = append(h.resolved, v.String())
	h.mu.Unlock()
	return &source.ProviderRoot{Provider: p, Version: v, Root: &source.Root{Digest: rootOf(v.String())}}, nil
}

func (h *heldProviders) ResolveProviderAt(ctx context.Context, p names.Provider, v names.Version, index digest.Digest) (*source.ProviderRoot, error) {
	return h.ResolveProvider(ctx, p, v, names.ViaMirror)
}

func (h *heldProviders) ReadProvider(ctx context.Context, r *source.ProviderRoot, need source.Need) (*source.ProviderRelease, error) {
	return &source.ProviderRelease{ProviderRoot: r}, nil
}

func (h *heldProviders) OpenProviderPackage(ctx context.Context, r *source.ProviderRoot, pl names.Platform) (*source.Blob, error) {
	return nil, errors.ErrUnsupported
}

func each(ctx context.Context, vs names.VersionList, fn func(ctx context.Context, i int, v names.Version) error) error {
	for i, v := range vs {
		if err := fn(ctx, i, v); err != nil {
			return err
		}
	}
	return nil
}

var p = names.Provider{Hostname: "example.com", Namespace: "acme", Type: "aws"}

func TestGateLeavesOutWhatThePolicyDeniesWithoutReadingIt(t *testing.T) {
	inner := &heldProviders{versions: []string{"1.0.0", "1.1.0", "2.0.0"}}
	g := &gate.Providers{Inner: inner, Each: each, Judge: providerJudge{
		deniedVersions: map[string]bool{"2.0.0": true},
		refusedRoots:   map[digest.Digest]bool{rootOf("1.1.0"): true},
	}}
	l, err := g.ProviderVersions(context.Background(), p, names.ViaRegistry, source.ListOptions{Need: source.NeedSummary})
	if err != nil {
		t.Fatal(err)
	}
	var d *source.Denied
	if !errors.As(l.Left["2.0.0"], &d) || d.Reason != "denied" {
		t.Errorf("2.0.0 left out for %v, want the policy's denial", l.Left["2.0.0"])
	}
	if !errors.As(l.Left["1.1.0"], &d) || d.Reason != "not attested" {
		t.Errorf("1.1.0 left out for %v, want the attestation rule's refusal", l.Left["1.1.0"])
	}
	if l.Releases["1.0.0"] == nil || len(l.Releases) != 1 {
		t.Errorf("releases %v, want 1.0.0 alone", l.Releases)
	}
	if slices.Contains(inner.resolved, "2.0.0") {
		t.Errorf("the denied 2.0.0 was read: %v", inner.resolved)
	}
	if _, err := g.ResolveProvider(context.Background(), p, names.MustParseVersion("2.0.0"), names.ViaMirror); !errors.As(err, &d) {
		t.Errorf("asked for 2.0.0: %v, want the denial", err)
	}
	root, err := g.ResolveProvider(context.Background(), p, names.MustParseVersion("1.1.0"), names.ViaMirror)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.ReadProvider(context.Background(), root, source.NeedPackages); !errors.As(err, &d) || d.Reason != "not attested" {
		t.Errorf("reading 1.1.0: %v, want the attestation rule's refusal whatever the read found", err)
	}
}

// pulling is a source that pulls through: it counts what is asked of it
// besides what it holds.
type pulling struct {
	heldProviders
	heldAsked, warmed int
}

func (h *pulling) ResolveHeldProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*source.ProviderRoot, error) {
	h.heldAsked++
	return nil, source.MarkNotHeld(source.NotFoundf("no version %s", v))
}

func (h *pulling) WarmProvider(ctx context.Context, r *source.ProviderRoot, pl names.Platform) {
	h.warmed++
}

// The gate judges what a source holds as it judges what it resolves, and
// passes the early download of a package on.
func TestGatePassesHeldResolutionAndWarmingOn(t *testing.T) {
	inner := &pulling{}
	g := &gate.Providers{Inner: inner, Each: each, Judge: providerJudge{deniedVersions: map[string]bool{"2.0.0": true}}}
	var d *source.Denied
	if _, err := g.ResolveHeldProvider(context.Background(), p, names.MustParseVersion("2.0.0"), names.ViaMirror); !errors.As(err, &d) || inner.heldAsked != 0 {
		t.Errorf("held 2.0.0: %v (inner asked %d times), want the denial, nothing asked", err, inner.heldAsked)
	}
	if _, err := g.ResolveHeldProvider(context.Background(), p, names.MustParseVersion("1.0.0"), names.ViaMirror); !source.IsNotHeld(err) || inner.heldAsked != 1 || len(inner.resolved) != 0 {
		t.Errorf("held 1.0.0: %v, want the inner source's held answer alone (asked %d, resolved %v)", err, inner.heldAsked, inner.resolved)
	}
	g.WarmProvider(context.Background(), &source.ProviderRoot{Provider: p, Version: names.MustParseVersion("1.0.0")}, names.Platform{OS: "linux", Arch: "amd64"})
	if inner.warmed != 1 {
		t.Errorf("warmed %d times through the gate, want 1", inner.warmed)
	}
}
