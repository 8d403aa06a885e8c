package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// The largest providers (hashicorp/aws: over 600 versions of about 15
// platforms), listed cold through serve with its defaults: the tag list's
// pages, then one round trip per store.DefaultConcurrency versions
// (--registry-concurrency), one request per version. Counted, not timed, at
// a front that puts the registry a second away (far more than the proxy's
// own work between two of its requests, so the waves stay apart on a busy
// machine): each request's Round is the number of sequential round trips
// before it. The goal this keeps is docs/benchmarks.md's cold /versions of
// 2,000 versions × 15 platforms, 40 ms away, under 1 s.
func TestLargestListingRoundTrips(t *testing.T) {
	const versions = 2000
	reg := testenv.StartRegistry(t)
	seedLargest(t, reg, "providers/acme/aws", versions)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Latency: time.Second})
	s := startServe(t, "--provider-template", front.Host+"/providers/${namespace}/${type}")
	front.ResetLog()
	code, body := s.get(t, "/v1/providers/acme/aws/versions")
	if code != http.StatusOK {
		t.Fatalf("/versions: %d %s", code, body)
	}
	var doc wire.RegistryVersions
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Versions) != versions || len(doc.Warnings) != 0 {
		t.Fatalf("%d versions, warnings %q; want %d", len(doc.Versions), doc.Warnings, versions)
	}
	for _, v := range doc.Versions {
		if len(v.Platforms) != len(seed.ManyPlatforms) {
			t.Fatalf("version %s lists %d platforms, want %d", v.Version, len(v.Platforms), len(seed.ManyPlatforms))
		}
	}
	log := withoutStartupCheck(front.Log())
	// 1,000 tags a page: the versions' and, on a registry without the
	// referrers API (Distribution), the sha256-<hex> tags of the SBOMs
	// push stores for the first version's platforms.
	tagPages := (countTags(t, reg, "providers/acme/aws") + 999) / 1000
	if len(log) > tagPages+versions {
		t.Errorf("%d registry requests, want the tag list's %d pages and one per version (%d)", len(log), tagPages, tagPages+versions)
	}
	// The tag list's first page, then the versions 256 at a time: the
	// second page is read beside the first page's versions (store's
	// Prefetcher). Slack as in TestManyVersions: one round for a slot
	// freed early or the connections the first wave opens.
	waves := (versions + store.DefaultConcurrency - 1) / store.DefaultConcurrency
	if rounds, want := front.Rounds(), 1+waves+1; rounds > want {
		t.Errorf("%d sequential round trips, want at most %d (the first of %d tag pages, then %d versions at a time beside the later pages)", rounds, want, tagPages, store.DefaultConcurrency)
	}
	perRound := map[int]int{}
	for _, e := range log {
		perRound[e.Round]++
	}
	t.Logf("%d requests in %d sequential round trips: %v", len(log), front.Rounds(), perRound)
}

// countTags is how many tags repo has.
func countTags(t *testing.T, reg *testenv.Registry, repo string) int {
	t.Helper()
	n := 0
	if err := registryRepo(t, reg, repo).Tags(context.Background(), "", func(page []string) error {
		n += len(page)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// seedLargest puts n versions of a provider of seed.ManyPlatforms into
// repository repo: the first pushed as `push provider` does, the others
// indexes of their own (seed.DerivedIndex) written into the registry's
// storage, which takes a moment where pushing them would take a minute.
func seedLargest(t *testing.T, reg *testenv.Registry, repo string, n int) {
	t.Helper()
	seed.SignedListing(t, reg, repo, 1, seed.ManyPlatforms)
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	r, err := client.OpenReadOnly(context.Background(), oci.Reference{Registry: reg.Host, Repository: repo})
	if err != nil {
		t.Fatal(err)
	}
	_, base, err := oci.FetchReference(context.Background(), r, seed.Version(0))
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < n; i++ {
		v := seed.Version(i)
		body, err := seed.DerivedIndex(base, v)
		if err != nil {
			t.Fatal(err)
		}
		storeManifest(t, reg, repo, body, names.TagForVersion(names.MustParseVersion(v)))
	}
}
