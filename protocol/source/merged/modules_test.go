package merged_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/merged"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// mapping is a source of one mapping's modules: what it answers for each
// version, by method.
type mapping struct {
	name     string
	versions []string          // listed, Stored
	listErr  error             // ModuleVersions' answer, when set
	release  map[string]error  // ModuleRelease's failure by version (absent: stored)
	lately   map[string]bool   // stored lately by pull-through: no root
	fetch    map[string]string // FetchModule: version → manifest digest it pulls
	asked    []string          // what was asked, in order
}

var _ source.Modules = (*mapping)(nil)

func (m *mapping) ModuleVersions(context.Context, source.ModuleAddress) (source.ModuleListing, error) {
	m.asked = append(m.asked, "versions")
	if m.listErr != nil {
		return source.ModuleListing{}, m.listErr
	}
	var l source.ModuleListing
	for _, v := range m.versions {
		l.Versions = append(l.Versions, source.Listed{Version: names.MustParseVersion(v), Stored: true})
	}
	return l, nil
}

func (m *mapping) ModuleRelease(_ context.Context, _ source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	m.asked = append(m.asked, "release "+v.String())
	return m.stored(v)
}

func (m *mapping) stored(v names.Version) (*source.ModuleRelease, error) {
	if err, ok := m.release[v.String()]; ok {
		return nil, err
	}
	if m.lately[v.String()] {
		return &source.ModuleRelease{Version: v}, nil
	}
	if !slices.Contains(m.versions, v.String()) {
		return nil, source.MarkNotHeld(source.NotFoundf("%s: no version %s", m.name, v))
	}
	return &source.ModuleRelease{Version: v, Root: &source.Root{Digest: digest.FromString(m.name + v.String())}}, nil
}

func (m *mapping) FetchModule(_ context.Context, _ source.ModuleAddress, v names.Version) (*source.ModuleRelease, error) {
	m.asked = append(m.asked, "fetch "+v.String())
	if d, ok := m.fetch[v.String()]; ok {
		return &source.ModuleRelease{Version: v, Root: &source.Root{Digest: digest.Digest(d)}}, nil
	}
	return m.stored(v)
}

func (m *mapping) OpenModule(_ context.Context, _ source.ModuleAddress, v names.Version, manifest digest.Digest) (*source.Blob, error) {
	m.asked = append(m.asked, "open "+v.String())
	rel, err := m.stored(v)
	if err != nil {
		return nil, err
	}
	if rel.Root == nil || rel.Root.Digest != manifest {
		return nil, source.NotFoundf("%s: no package with manifest %s", m.name, manifest)
	}
	return &source.Blob{Name: m.name}, nil
}

var addr = source.ModuleAddress{Host: "example.com", Module: names.Module{Namespace: "acme", Name: "network", System: "aws"}}

func notMapped(name string) error {
	return source.MarkNotMapped(source.NotFoundf("%s: no repository here", name))
}

func denied(name string) error {
	return &source.Denied{Msg: name + ": denied", Rule: "attestation", Reason: "no attestation"}
}

var outage = &store.Error{Failure: oci.FailureTimeout, What: "reading a manifest", Err: errors.New("slow")}

func sources(ms ...*mapping) []source.Modules {
	out := make([]source.Modules, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

func rootOf(name, v string) digest.Digest { return digest.FromString(name + v) }

func TestFirstHolderWins(t *testing.T) {
	a := &mapping{name: "a", versions: []string{"1.0.0", "1.1.0"}}
	b := &mapping{name: "b", versions: []string{"1.0.0", "1.2.0"}}
	m := &merged.Modules{Mappings: sources(a, b), Log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()

	l, err := m.ModuleVersions(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range l.Versions {
		got = append(got, e.Version.String())
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"1.0.0", "1.1.0", "1.2.0"}) {
		t.Errorf("versions %v, want the union", got)
	}
	for v, want := range map[string]string{"1.0.0": "a", "1.1.0": "a", "1.2.0": "b"} {
		rel, err := m.FetchModule(ctx, addr, names.MustParseVersion(v))
		if err != nil || rel.Root.Digest != rootOf(want, v) {
			t.Errorf("%s: %v %v, want mapping %s's", v, rel, err, want)
		}
		blob, err := m.OpenModule(ctx, addr, names.MustParseVersion(v), rootOf(want, v))
		if err != nil || blob.Name != want {
			t.Errorf("%s: opened %v %v, want mapping %s's", v, blob, err, want)
		}
	}
	_, err = m.FetchModule(ctx, addr, names.MustParseVersion("3.0.0"))
	if !source.IsNotHeld(err) || err.Error() != "a: no version 3.0.0" {
		t.Errorf("a version none holds: %v, want the first mapping's not held", err)
	}
}

// A mapping's failure that does not say "absent" is the answer: an outage
// never turns into another mapping's copy or a shorter list.
func TestAMappingsFailureIsTheAnswer(t *testing.T) {
	a := &mapping{name: "a", versions: []string{"1.0.0"}, release: map[string]error{"1.0.0": outage}, listErr: outage}
	b := &mapping{name: "b", versions: []string{"1.0.0", "1.1.0"}}
	m := &merged.Modules{Mappings: sources(a, b), Log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	if _, err := m.ModuleVersions(ctx, addr); !errors.Is(err, outage) {
		t.Errorf("versions: %v, want the first mapping's outage", err)
	}
	if _, err := m.FetchModule(ctx, addr, names.MustParseVersion("1.0.0")); !errors.Is(err, outage) {
		t.Errorf("release: %v, want the first mapping's outage", err)
	}
	// A later mapping's outage does not matter when an earlier one serves
	// the version.
	if rel, err := (&merged.Modules{Mappings: sources(b, a)}).FetchModule(ctx, addr, names.MustParseVersion("1.0.0")); err != nil || rel.Root.Digest != rootOf("b", "1.0.0") {
		t.Errorf("an outage of a later mapping: %v %v, want the first's copy", rel, err)
	}
}

// A copy a mapping holds but may not serve is passed over for the next
// mapping's; when none serves it, the first refusal is the answer, and
// nothing is pulled.
func TestARefusedCopyIsPassedOver(t *testing.T) {
	a := &mapping{name: "a", versions: []string{"1.0.0", "2.0.0"}, release: map[string]error{"1.0.0": denied("a"), "2.0.0": denied("a")}, fetch: map[string]string{"2.0.0": "sha256:pulled"}}
	b := &mapping{name: "b", versions: []string{"1.0.0"}}
	m := &merged.Modules{Mappings: sources(a, b), Pulls: true}
	ctx := context.Background()
	if rel, err := m.FetchModule(ctx, addr, names.MustParseVersion("1.0.0")); err != nil || rel.Root.Digest != rootOf("b", "1.0.0") {
		t.Errorf("1.0.0: %v %v, want the second mapping's copy", rel, err)
	}
	var d *source.Denied
	if _, err := m.FetchModule(ctx, addr, names.MustParseVersion("2.0.0")); !errors.As(err, &d) || d.Msg != "a: denied" {
		t.Errorf("2.0.0: %v, want the first refusal", err)
	}
	if slices.Contains(a.asked, "fetch 2.0.0") {
		t.Error("a refused version was pulled")
	}
}

// With pull-through, every mapping is asked for what it holds before the
// first mapping pulls a version none holds; a mapping with no repository
// for the module is passed over, and without one for the first mapping
// nothing is pulled.
func TestPullOnlyWhatNoMappingHolds(t *testing.T) {
	a := &mapping{name: "a", fetch: map[string]string{"1.0.0": "sha256:pulled", "2.0.0": "sha256:pulled"}, lately: map[string]bool{"2.0.0": true}}
	b := &mapping{name: "b", versions: []string{"1.1.0"}}
	m := &merged.Modules{Mappings: sources(a, b), Pulls: true}
	ctx := context.Background()
	if rel, err := m.FetchModule(ctx, addr, names.MustParseVersion("1.1.0")); err != nil || rel.Root.Digest != rootOf("b", "1.1.0") {
		t.Errorf("1.1.0: %v %v, want the second mapping's, unpulled", rel, err)
	}
	for _, v := range []string{"1.0.0", "2.0.0"} {
		if rel, err := m.FetchModule(ctx, addr, names.MustParseVersion(v)); err != nil || rel.Root.Digest != "sha256:pulled" {
			t.Errorf("%s: %v %v, want it pulled by the first mapping", v, rel, err)
		}
	}
	if want := []string{"release 1.1.0", "release 1.0.0", "fetch 1.0.0", "release 2.0.0", "fetch 2.0.0"}; !slices.Equal(a.asked, want) {
		t.Errorf("the first mapping was asked %v, want %v", a.asked, want)
	}
	// Stored lately, it is listed as served without a root.
	if rel, err := m.ModuleRelease(ctx, addr, names.MustParseVersion("2.0.0")); err != nil || rel.Root != nil {
		t.Errorf("2.0.0 as stored: %v %v", rel, err)
	}

	unmapped := &mapping{name: "a", release: map[string]error{"1.0.0": notMapped("a")}, listErr: notMapped("a"), fetch: map[string]string{"1.0.0": "sha256:pulled"}}
	m = &merged.Modules{Mappings: sources(unmapped, b), Pulls: true}
	if _, err := m.FetchModule(ctx, addr, names.MustParseVersion("1.0.0")); !source.IsNotHeld(err) || err.Error() != "b: no version 1.0.0" {
		t.Errorf("first mapping unmapped: %v, want the second mapping's not held", err)
	}
	if slices.Contains(unmapped.asked, "fetch 1.0.0") {
		t.Error("pulled into a mapping with no repository for the module")
	}
	if l, err := m.ModuleVersions(ctx, addr); err != nil || len(l.Versions) != 1 {
		t.Errorf("first mapping unmapped: versions %v %v", l, err)
	}
	none := &merged.Modules{Mappings: sources(unmapped, &mapping{name: "b", listErr: notMapped("b")})}
	if _, err := none.ModuleVersions(ctx, addr); !source.IsNotMapped(err) || err.Error() != "a: no repository here" {
		t.Errorf("no mapping: %v, want the first mapping's reason", err)
	}
}

// Listing, a mapping with nothing of the module is passed over; the first
// one's absence is the answer when none has any.
func TestListingPassesOverAbsentMappings(t *testing.T) {
	gone := func(name string) *mapping {
		return &mapping{name: name, listErr: source.NotFoundf("%s: unknown module", name)}
	}
	ctx := context.Background()
	m := &merged.Modules{Mappings: sources(gone("a"), &mapping{name: "b", versions: []string{"1.0.0"}})}
	if l, err := m.ModuleVersions(ctx, addr); err != nil || len(l.Versions) != 1 {
		t.Errorf("versions %v %v", l, err)
	}
	m = &merged.Modules{Mappings: sources(gone("a"), gone("b"))}
	if _, err := m.ModuleVersions(ctx, addr); err == nil || err.Error() != "a: unknown module" {
		t.Errorf("%v, want the first mapping's", err)
	}
}
