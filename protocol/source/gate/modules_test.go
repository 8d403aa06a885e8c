package gate_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
)

// judge denies the versions in deny by the policy, and the roots in
// refuse by the attestation rule.
type judge struct {
	deny   []string
	refuse []digest.Digest
	judged []string // the releases judged, as kind address version
}

func (j *judge) Versions(kind names.Kind, address, what string, vs []names.Version) gate.Verdicts {
	out := gate.Verdicts{Denied: map[string]error{}}
	for _, v := range vs {
		if err := j.Version(kind, address, what, v); err != nil {
			out.Denied[v.String()] = err
		}
	}
	return out
}

func (j *judge) Version(_ names.Kind, _, what string, v names.Version) error {
	if slices.Contains(j.deny, v.String()) {
		return &source.Denied{Msg: what + " " + v.String() + " is not served", Rule: "r"}
	}
	return nil
}

func (j *judge) ReadsRoot(names.Kind, string, bool) bool { return true }

func (j *judge) Facts(_ context.Context, kind names.Kind, address, what string, v names.Version, root source.Root) (string, error) {
	j.judged = append(j.judged, string(kind)+" "+address+" "+v.String())
	return "", nil
}

func (j *judge) Platform(names.Provider, names.Version, names.Platform) error { return nil }

func (j *judge) PullsOnlyStored(names.Kind, string) bool { return false }

func (j *judge) Attested(_ context.Context, kind names.Kind, what string, v names.Version, root source.Root, attested bool) error {
	if !attested {
		return errors.New("modules are always attested")
	}
	if slices.Contains(j.refuse, root.Digest) {
		return &source.Denied{Msg: what + " " + v.String() + " is not served: no attestation", Rule: "attestation"}
	}
	return nil
}

// modules holds 1.0.0 and 1.1.0, and lists 2.0.0 offered by an origin.
type modules struct{ read []string }

func (m *modules) ModuleVersions(context.Context, source.ModuleAddress) (source.ModuleListing, error) {
	var l source.ModuleListing
	for _, v := range []string{"1.0.0", "1.1.0"} {
		l.Versions = append(l.Versions, source.Listed{Version: names.MustParseVersion(v), Stored: true})
	}
	l.Versions = append(l.Versions, source.Listed{Version: names.MustParseVersion("2.0.0")})
	return l, nil
}

func (m *modules) ModuleRelease(_ context.Context, _ source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	m.read = append(m.read, v.String())
	if v.String() == "2.0.0" {
		return &source.ModuleRelease{Version: v}, nil
	}
	return &source.ModuleRelease{Version: v, Root: &source.Root{Digest: digest.FromString(v.String())}}, nil
}

func (m *modules) FetchModule(ctx context.Context, a source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	return m.ModuleRelease(ctx, a, v)
}

func (m *modules) OpenModule(_ context.Context, _ source.ModuleAddress, v names.Version, manifest digest.Digest) (*source.Blob, error) {
	m.read = append(m.read, "open "+v.String())
	return &source.Blob{Name: v.String()}, nil
}

var addr = source.ModuleAddress{Host: "example.com", Module: names.Module{Namespace: "acme", Name: "network", System: "aws"}}

func TestModulesGate(t *testing.T) {
	inner := &modules{}
	j := &judge{deny: []string{"1.1.0"}, refuse: []digest.Digest{digest.FromString("1.0.0")}}
	g := &gate.Modules{Inner: inner, Judge: j}
	ctx := context.Background()

	l, err := g.ModuleVersions(ctx, addr)
	if err != nil || len(l.Versions) != 2 || len(l.Denied) != 1 || l.Denied[0].String() != "1.1.0" {
		t.Fatalf("listing %+v %v: want 1.0.0 and 2.0.0 listed, 1.1.0 denied", l, err)
	}
	var d *source.Denied
	if _, err := g.FetchModule(ctx, addr, names.MustParseVersion("1.1.0")); !errors.As(err, &d) || d.Rule != "r" {
		t.Errorf("1.1.0: %v, want the policy's denial", err)
	}
	if _, err := g.OpenModule(ctx, addr, names.MustParseVersion("1.1.0"), "sha256:x"); !errors.As(err, &d) {
		t.Errorf("1.1.0 opened: %v, want the policy's denial", err)
	}
	if slices.Contains(inner.read, "1.1.0") || slices.Contains(inner.read, "open 1.1.0") {
		t.Error("a version the policy denies was read")
	}
	if _, err := g.ModuleRelease(ctx, addr, names.MustParseVersion("1.0.0")); !errors.As(err, &d) || d.Rule != "attestation" {
		t.Errorf("1.0.0: %v, want the attestation rule's refusal", err)
	}
	if rel, err := g.ModuleRelease(ctx, addr, names.MustParseVersion("2.0.0")); err != nil || rel.Root != nil {
		t.Errorf("2.0.0, not stored: %v %v, want it unjudged", rel, err)
	}
	if want := []string{"module example.com/acme/network/aws 1.0.0"}; !slices.Equal(j.judged, want) {
		t.Errorf("judged %v, want %v", j.judged, want)
	}
}
