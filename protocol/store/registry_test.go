package store_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// registrySetup is a real Distribution registry holding the hello
// provider at acme/hello (tags 1.0.0 and 1.1.0, one artifact), pushed
// with the project's own code.
type registrySetup struct {
	reg    *testenv.Registry
	client *oci.Client // trusts the test CA; reads through fronts
}

func startRegistry(t *testing.T) *registrySetup {
	t.Helper()
	reg := testenv.StartRegistry(t)
	client := newClient(t, oci.Options{CAFile: reg.CA.CertFile})
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: "acme/hello"})
	if err != nil {
		t.Fatal(err)
	}
	push(t, repo, providerArtifact(t, "1.0.0"), "1.0.0", "1.1.0")
	return &registrySetup{reg: reg, client: client}
}

// through is the store's view of repository name behind front.
func (rs *registrySetup) through(s *store.Store, front *testenv.Front, name string) *store.Repo {
	return s.Repo(oci.Reference{Registry: front.Host, Repository: name})
}

func tagLists(e testenv.AccessEntry) bool {
	return e.Method == http.MethodGet && strings.HasSuffix(e.Path, "/tags/list")
}

func manifestReads(tag string) func(testenv.AccessEntry) bool {
	return func(e testenv.AccessEntry) bool {
		return (e.Method == http.MethodGet || e.Method == http.MethodHead) && strings.HasSuffix(e.Path, "/manifests/"+tag)
	}
}

// Failures from a real registry are classified: a missing repository is
// NotFound and says so; a missing tag in an existing repository is
// NotFound for that version only. A registry that denies instead of
// answering 404 (GHCR) is read as "missing" only for the hosts
// --denied-as-missing names.
func TestRegistryFailuresClassified(t *testing.T) {
	ctx := context.Background()
	rs := startRegistry(t)
	plain := testenv.StartFrontFor(t, rs.reg, testenv.FrontOptions{})
	denying := testenv.StartFrontFor(t, rs.reg, testenv.FrontOptions{DenyMissing: http.StatusForbidden})

	s := newStore(t, store.Options{Client: rs.client})
	_, err := rs.through(s, plain, "acme/nothing").Versions(ctx)
	if got := failure(t, err); got != oci.FailureNotFound || !store.RepoMissing(err) {
		t.Errorf("a missing repository: failure %v, repo missing %v; want not found, missing", got, store.RepoMissing(err))
	}
	_, err = rs.through(s, plain, "acme/hello").ProviderVersion(ctx, version(t, "9.9.9"))
	if got := failure(t, err); got != oci.FailureNotFound || store.RepoMissing(err) || !store.Skippable(err) {
		t.Errorf("a missing tag: failure %v, repo missing %v, skippable %v; want a skippable not-found version", got, store.RepoMissing(err), store.Skippable(err))
	}

	// Without --denied-as-missing a denial is a denial: the proxy's
	// credentials are wrong, and it must not answer "no such provider".
	_, err = rs.through(s, denying, "acme/nothing").Versions(ctx)
	if got := failure(t, err); got != oci.FailureDenied || store.RepoMissing(err) {
		t.Errorf("denied, not --denied-as-missing: failure %v, repo missing %v; want denied", got, store.RepoMissing(err))
	}
	other := newStore(t, store.Options{Client: rs.client, DeniedAsMissing: []string{"ghcr.io"}})
	if got := failure(t, func() error { _, err := rs.through(other, denying, "acme/nothing").Versions(ctx); return err }()); got != oci.FailureDenied {
		t.Errorf("denied by a host --denied-as-missing does not name: failure %v, want denied", got)
	}

	for _, hosts := range [][]string{{denying.Host}, {"*"}} {
		s := newStore(t, store.Options{Client: rs.client, DeniedAsMissing: hosts})
		_, err := rs.through(s, denying, "acme/nothing").Versions(ctx)
		if got := failure(t, err); got != oci.FailureNotFound || !store.RepoMissing(err) {
			t.Errorf("--denied-as-missing %v: failure %v, repo missing %v; want not found, missing", hosts, got, store.RepoMissing(err))
		}
		// An existing repository still reads through the denying registry.
		if l, err := rs.through(s, denying, "acme/hello").Versions(ctx); err != nil || len(l.Versions) != 2 {
			t.Errorf("--denied-as-missing %v, an existing repository: %v, %v", hosts, l.Versions, err)
		}
	}
}

// Within TagTTL a tag list is read once; what a version tag names is read
// once within ResolveTTL; a failure is remembered for FailureTTL. Past
// TagTTL (with stale serving off) the tags are read again.
func TestRegistryReadsCached(t *testing.T) {
	ctx := context.Background()
	rs := startRegistry(t)
	front := testenv.StartFrontFor(t, rs.reg, testenv.FrontOptions{})

	s := newStore(t, store.Options{Client: rs.client, TagTTL: time.Minute, ResolveTTL: time.Minute, FailureTTL: time.Minute})
	repo := rs.through(s, front, "acme/hello")
	for range 3 {
		if l, err := repo.Versions(ctx); err != nil || len(l.Versions) != 2 {
			t.Fatalf("versions %v, %v", l.Versions, err)
		}
		if _, err := repo.ProviderVersion(ctx, version(t, "1.1.0")); err != nil {
			t.Fatal(err)
		}
		if _, err := rs.through(s, front, "acme/nothing").Versions(ctx); err == nil {
			t.Fatal("a missing repository listed versions")
		}
	}
	// The same repository through a new Repo value shares the cache.
	if _, err := rs.through(s, front, "acme/hello").Versions(ctx); err != nil {
		t.Fatal(err)
	}
	if n := front.Count(tagLists); n != 2 {
		t.Errorf("%d tag list reads for two repositories read four and three times, want 2 (one each):\n%v", n, front.Log())
	}
	if n := front.Count(manifestReads("1.1.0")); n != 1 {
		t.Errorf("%d reads of tag 1.1.0 for three resolutions, want 1:\n%v", n, front.Log())
	}

	front.ResetLog()
	short := newStore(t, store.Options{Client: rs.client, TagTTL: time.Millisecond, MaxStale: -1})
	repo = rs.through(short, front, "acme/hello")
	for range 2 {
		if _, err := repo.Versions(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := front.Count(tagLists); n != 2 {
		t.Errorf("%d tag list reads past a 1ms TagTTL without stale serving, want 2", n)
	}
}

// A manifest the store refuses (here a module where a provider index must
// be) is remembered for FailureTTL only, like any failure, not for
// ResolveTTL: once the tag names what it should, the version is served
// again within FailureTTL (docs/proxy.md, "Caching and limits").
func TestRefusedManifestRememberedForFailureTTLOnly(t *testing.T) {
	ctx := context.Background()
	rs := startRegistry(t)
	ref := oci.Reference{Registry: rs.reg.Host, Repository: "acme/hello"}
	repo, err := rs.client.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	push(t, repo, moduleArtifact(t, moduleZip(t, "# not a provider\n")), "1.1.0")
	const failureTTL = 50 * time.Millisecond
	s := newStore(t, store.Options{Client: rs.client, FailureTTL: failureTTL, ResolveTTL: time.Hour})
	if _, err := s.Repo(ref).ProviderVersion(ctx, version(t, "1.1.0")); failure(t, err) != oci.FailureInvalid {
		t.Fatalf("a module tagged as a provider version: %v; want invalid", err)
	}
	push(t, repo, providerArtifact(t, "1.1.0"), "1.1.0")
	time.Sleep(2 * failureTTL)
	pv, err := s.Repo(ref).ProviderVersion(ctx, version(t, "1.1.0"))
	if err != nil {
		t.Fatalf("after FailureTTL the refusal is still answered (kept for ResolveTTL): %v", err)
	}
	if len(pv.Platforms) == 0 {
		t.Errorf("the provider index read after recovery has no platforms: %+v", pv)
	}
}
