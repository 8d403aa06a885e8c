package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
	"github.com/oci-tofu/oci-tofu/protocol/store"
	"github.com/opencontainers/go-digest"
)

// largestVersions is the largest provider's version count: issue 44's
// 2,000 (× 15 platforms).
const largestVersions = 2000

// startLargestRegistry is a registry holding the largest provider
// (providers/acme/aws) and a front a second away listing, ECR-style in
// pages of 1,000, every version's tag schema tags beside its own.
func startLargestRegistry(t *testing.T) (*testenv.Registry, *testenv.Front) {
	t.Helper()
	reg := testenv.StartRegistry(t)
	seedLargest(t, reg, "providers/acme/aws", largestVersions)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Latency: time.Second, TagPageSize: 1000,
		ExtraTags: func(string) []string { return schemaTags(largestVersions, len(seed.ManyPlatforms)) }})
	return reg, front
}

// The largest providers (hashicorp/aws: over 600 versions of about 15
// platforms), listed cold through serve with its defaults: the tag list's
// pages, then one round trip per store.DefaultConcurrency versions
// (--registry-concurrency), one request per version. Counted, not timed, at
// a front that puts the registry a second away (far more than the proxy's
// own work between two of its requests, so the waves stay apart on a busy
// machine): each request's Round is the number of sequential round trips
// before it. The goal this keeps is docs/benchmarks.md's cold /versions of
// 2,000 versions × 15 platforms, 40 ms away, under 1 s. The registry has
// no referrers API, so every version carries the tag schemas' tags of its
// SBOMs and attestations (17 each, 34,000 in all: listed by the front,
// ECR-style pages of 1,000 with opaque cursors): the listing reads the
// versions' pages and stops in the schema tags (oci.ListTagsBefore).
func TestLargestListingRoundTrips(t *testing.T) {
	const versions = largestVersions
	_, front := startLargestRegistry(t)
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
	// 1,000 tags a page: two of versions, then one in the schema tags,
	// which runs past them far enough to take the list as ordered.
	tagPages := 0
	for _, e := range log {
		if strings.HasSuffix(e.Path, "/tags/list") {
			tagPages++
		}
	}
	if tagPages > 3 || len(log) > tagPages+versions {
		t.Errorf("%d registry requests, %d of them tag list pages; want at most 3 pages (two of versions, one in the schema tags) and one request per version (%d)", len(log), tagPages, versions)
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

// schemaTags are the tag schemas' tags of n versions of a provider of
// platforms platforms on a registry without the referrers API: per
// platform manifest the sha256-<hex> index of its SBOM and attestation
// referrers, per index that of its signature and attestation bundles and
// cosign's .sig and .att.
func schemaTags(n, platforms int) []string {
	var out []string
	for v := range n {
		for p := range platforms {
			out = append(out, "sha256-"+digest.FromString(fmt.Sprint(v, p)).Encoded())
		}
		index := "sha256-" + digest.FromString(fmt.Sprint(v)).Encoded()
		out = append(out, index, index+".sig")
	}
	return out
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

// TestLargestListingRoundTripsWithIndex is TestLargestListingRoundTrips
// with the repository's version index (oci/versionindex) written, as
// push leaves it: the cold listing reads the tag list's pages and, beside
// the first, the index, and no version's own index (issue 44's goal: at
// most 4 sequential round trips and 10 registry requests). The document
// equals the one read without the index.
func TestLargestListingRoundTripsWithIndex(t *testing.T) {
	const versions = largestVersions
	reg, front := startLargestRegistry(t)
	plain := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}")
	_, want := plain.get(t, "/v1/providers/acme/aws/versions") // before the index: every version read
	size := indexLargest(t, reg, "providers/acme/aws", versions)
	t.Logf("version index of %d versions × %d platforms: %d bytes", versions, len(seed.ManyPlatforms), size)
	s := startServe(t, "--provider-template", front.Host+"/providers/${namespace}/${type}")
	front.ResetLog()
	code, body := s.get(t, "/v1/providers/acme/aws/versions")
	if code != http.StatusOK {
		t.Fatalf("/versions: %d %s", code, body)
	}
	if string(body) != string(want) {
		t.Errorf("the listing read with the index differs from the one read without it:\n%.400s\nwant\n%.400s", body, want)
	}
	log := withoutStartupCheck(front.Log())
	perRound := map[int]int{}
	for _, e := range log {
		perRound[e.Round]++
		if strings.Contains(e.Path, "/manifests/") && !strings.HasSuffix(e.Path, "/manifests/"+versionindex.Tag) {
			t.Errorf("the listing read %s %s: with the index it reads no version's own index", e.Method, e.Path)
		}
	}
	if rounds := front.Rounds(); rounds > 4 || len(log) > 10 {
		t.Errorf("%d registry requests in %d sequential round trips (%v); want at most 10 in 4", len(log), rounds, perRound)
	}
	t.Logf("%d requests in %d sequential round trips: %v", len(log), front.Rounds(), perRound)
}

// indexLargest writes the version index of seedLargest's n versions and
// returns its size in bytes.
func indexLargest(t *testing.T, reg *testenv.Registry, repo string, n int) int {
	t.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	r, err := client.Open(oci.Reference{Registry: reg.Host, Repository: repo})
	if err != nil {
		t.Fatal(err)
	}
	_, base, err := oci.FetchReference(context.Background(), r, seed.Version(0))
	if err != nil {
		t.Fatal(err)
	}
	size, err := seed.VersionIndex(context.Background(), r, base, n)
	if err != nil {
		t.Fatal(err)
	}
	return size
}
