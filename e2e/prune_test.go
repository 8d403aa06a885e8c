package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
)

// pruneResult is what `prune --json` prints.
type pruneResult struct {
	Applied      bool `json:"applied"`
	Repositories []struct {
		Repository string `json:"repository"`
		Kind       string `json:"kind"`
		Versions   []struct {
			Tag     string   `json:"tag"`
			Digest  string   `json:"digest"`
			Action  string   `json:"action"`
			Kept    []string `json:"kept_by"`
			Bytes   int64    `json:"bytes"`
			Deleted []string `json:"deleted"`
			Error   string   `json:"error"`
		} `json:"versions"`
	} `json:"repositories"`
	Versions int   `json:"versions_to_delete"`
	Bytes    int64 `json:"bytes"`
}

func runPrune(t *testing.T, args ...string) (pruneResult, string, error) {
	t.Helper()
	out, err := run(t, append([]string{"prune", "--json"}, args...)...)
	var res pruneResult
	// The JSON comes first; an error line may follow it.
	if jerr := json.NewDecoder(strings.NewReader(out)).Decode(&res); jerr != nil && err == nil {
		t.Fatalf("prune --json printed no JSON: %v\n%s", jerr, out)
	}
	return res, out, err
}

// actions maps each version tag of the first repository to its action.
func actions(res pruneResult) map[string]string {
	out := map[string]string{}
	for _, v := range res.Repositories[0].Versions {
		out[v.Tag] = v.Action
	}
	return out
}

func sortedTags(t *testing.T, repo oci.ReadOnlyRepository) []string {
	t.Helper()
	tags, err := oci.ListTags(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(tags)
	return tags
}

// attachmentTags are the tags cosign and the referrers tag schema name
// after d.
func attachmentTags(d string) []string {
	hex := "sha256-" + strings.TrimPrefix(d, "sha256:")
	return []string{hex, hex + ".att", hex + ".sig"}
}

func bundles(t *testing.T, repo oci.ReadOnlyRepository, d string) int {
	t.Helper()
	held, err := attach.ReadReferrers(context.Background(), repo, digest.Digest(d), attach.ArtifactTypeSigstoreBundle)
	if err != nil {
		t.Fatal(err)
	}
	return len(held.Items)
}

// A dry run deletes nothing; --apply deletes exactly the versions it
// listed with their signatures and attestations (both forms), keeps
// the one a lock file pins, which tofu still installs, and a pruned
// version can be pushed again as a new push.
func TestPruneDryRunThenApply(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key, _ := ecdsaKeyPair(t)
	repo := reg.Host + "/providers/test/hello"
	digests := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1"} {
		digests[v] = pushHelloAttested(t, key, repo, v)
	}
	r := registryRepo(t, reg, "providers/test/hello")

	// A configuration locked at 1.0.0, under a tree of directories.
	tofu := testenv.Tofu(t, ociMirrorConfig(reg.Host))
	locks := t.TempDir()
	stack := filepath.Join(locks, "stacks", "prod")
	if err := os.MkdirAll(stack, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stack, "main.tf"), []byte(fmt.Sprintf(helloConfig, "1.0.0")), 0o644); err != nil {
		t.Fatal(err)
	}
	tofu.Run(t, stack, "init", "-input=false", "-no-color")

	before := sortedTags(t, r)
	for _, v := range digests {
		for _, tag := range attachmentTags(v) {
			if !slices.Contains(before, tag) {
				t.Fatalf("push --attest-key wrote no tag %s: %v", tag, before)
			}
		}
	}

	// Dry runs.
	res, out, err := runPrune(t, "--keep-newest", "1", repo)
	if err != nil {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	want := map[string]string{"1.0.0": "delete", "1.1.0": "keep", "2.0.0-rc1": "keep"}
	if got := actions(res); !sameActions(got, want) || res.Applied || res.Versions != 1 || res.Bytes <= 0 {
		t.Fatalf("dry run --keep-newest 1: %v, %d versions, %d bytes; want %v and some bytes\n%s", got, res.Versions, res.Bytes, want, out)
	}
	if res.Repositories[0].Kind != "provider" {
		t.Errorf("kind %q, want provider", res.Repositories[0].Kind)
	}
	res, out, err = runPrune(t, "--keep-locked", locks, repo)
	if err != nil {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	want = map[string]string{"1.0.0": "keep", "1.1.0": "delete", "2.0.0-rc1": "delete"}
	if got := actions(res); !sameActions(got, want) || !strings.Contains(out, "pinned by "+filepath.Join(stack, ".terraform.lock.hcl")) {
		t.Fatalf("dry run --keep-locked: %v, want %v, 1.0.0 pinned by the lock file\n%s", got, want, out)
	}
	// The audit trail keeps what was downloaded within the period (1.1.0
	// a day ago; 2.0.0-rc1 a year ago); the policy keeps what it marks.
	trail := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(audit.Options{Path: trail})
	if err != nil {
		t.Fatal(err)
	}
	for v, ago := range map[string]time.Duration{"1.1.0": 24 * time.Hour, "2.0.0-rc1": 365 * 24 * time.Hour} {
		l.Record(&audit.Event{Time: time.Now().Add(-ago), Event: audit.EventDownload, Outcome: audit.OutcomeDelivered, Client: "ci",
			Kind: "provider", Address: "localhost/test/hello", Version: v, Repository: repo})
	}
	l.Close()
	// 1.0.0 and 2.0.0-rc1 were pushed just now: too new to judge by
	// their downloads (TestPruneKeepDownloadedWithinNewVersions).
	res, out, err = runPrune(t, "--keep-downloaded-within", "30d", "--audit-log", trail, repo)
	want = map[string]string{"1.0.0": "keep", "1.1.0": "keep", "2.0.0-rc1": "keep"}
	if got := actions(res); err != nil || !sameActions(got, want) || !strings.Contains(out, "too new to judge by downloads") {
		t.Fatalf("dry run --keep-downloaded-within: %v, want %v, the new ones too new to judge (%v)\n%s", got, want, err, out)
	}
	pol := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(pol, []byte("provider \"*/*/*\" {\n  keep {\n    versions = \"~> 1.0\"\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, out, err = runPrune(t, "--policy", pol, repo)
	want = map[string]string{"1.0.0": "keep", "1.1.0": "keep", "2.0.0-rc1": "delete"}
	if got := actions(res); err != nil || !sameActions(got, want) {
		t.Fatalf("dry run --policy: %v, want %v (%v)\n%s", got, want, err, out)
	}
	human := mustRun(t, "prune", "--keep-locked", locks, repo)
	if !strings.Contains(human, "total: 2 versions") || !strings.Contains(human, "nothing was deleted") {
		t.Errorf("the table says:\n%s", human)
	}
	if after := sortedTags(t, r); !slices.Equal(after, before) {
		t.Fatalf("dry runs changed the tags: %v, were %v", after, before)
	}
	for v, d := range digests {
		if n := bundles(t, r, d); n != 2 {
			t.Errorf("after dry runs, %s has %d bundle referrers, want 2", v, n)
		}
	}

	// --apply.
	res, out, err = runPrune(t, "--apply", "--keep-locked", locks, repo)
	if err != nil {
		t.Fatalf("prune --apply: %v\n%s", err, out)
	}
	want = map[string]string{"1.0.0": "keep", "1.1.0": "deleted", "2.0.0-rc1": "deleted"}
	if got := actions(res); !sameActions(got, want) || !res.Applied {
		t.Fatalf("prune --apply: %v, want %v\n%s", got, want, out)
	}
	wantTags := append([]string{"1.0.0"}, attachmentTags(digests["1.0.0"])...)
	// With --attest-key each platform manifest's SBOM is attested too
	// (the referrers' sha256-<hex> index, the .att tag; no signature):
	// the kept version's stay, the deleted ones' went with them.
	pv, err := oci.ResolveProvider(context.Background(), r, names.MustParseVersion("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range pv.Platforms {
		wantTags = append(wantTags, attachmentTags(m.Digest.String())[:2]...)
	}
	// The version index stays, rewritten without the deleted versions'
	// entries (versionindex.DropGone).
	wantTags = append(wantTags, versionindex.Tag)
	slices.Sort(wantTags)
	if after := sortedTags(t, r); !slices.Equal(after, wantTags) {
		t.Errorf("after prune --apply the tags are %v, want %v", after, wantTags)
	}
	for _, v := range []string{"1.1.0", "2.0.0-rc1"} {
		for _, e := range res.Repositories[0].Versions {
			if e.Tag != v {
				continue
			}
			// The index, its platform and provenance manifests, two bundles,
			// the referrers index, the .sig and .att manifests.
			if len(e.Deleted) < 7 || !slices.Contains(e.Deleted, digests[v]) {
				t.Errorf("%s: deleted %v, want its index %s and its attachments", v, e.Deleted, digests[v])
			}
			for _, d := range e.Deleted {
				if _, err := r.Resolve(context.Background(), d); !oci.IsNotFound(err) {
					t.Errorf("%s: manifest %s reported deleted still resolves: %v", v, d, err)
				}
			}
		}
		if _, err := r.Resolve(context.Background(), digests[v]); !oci.IsNotFound(err) {
			t.Errorf("%s's index %s still resolves: %v", v, digests[v], err)
		}
	}
	if n := bundles(t, r, digests["1.0.0"]); n != 2 {
		t.Errorf("the kept 1.0.0 has %d bundle referrers, want 2", n)
	}
	mustRun(t, "verify", repo)

	// tofu still installs what the kept lock file pins.
	if err := os.RemoveAll(filepath.Join(stack, ".terraform")); err != nil {
		t.Fatal(err)
	}
	out = tofu.Run(t, stack, "init", "-input=false", "-no-color")
	if !strings.Contains(out, "Installed example.com/test/hello v1.0.0") {
		t.Errorf("tofu init after the prune:\n%s", out)
	}

	// Nothing more to prune; a pruned version pushed again is a new push.
	res, out, _ = runPrune(t, "--apply", "--keep-locked", locks, repo)
	if res.Versions != 0 {
		t.Errorf("a second prune deletes %d versions\n%s", res.Versions, out)
	}
	if d := pushAttested(t, key, repo, "1.1.0"); d != digests["1.1.0"] {
		t.Errorf("pushing 1.1.0 again gave %s, not %s", d, digests["1.1.0"])
	}
	if n := bundles(t, r, digests["1.1.0"]); n != 2 {
		t.Errorf("1.1.0 pushed again has %d bundle referrers, want 2", n)
	}
	mustRun(t, "verify", repo+":1.1.0")
}

// pushHelloAttested pushes a hello fixture version (2.0.0-rc1 is signed
// by another publisher key) with --attest-key and returns its digest.
func pushHelloAttested(t *testing.T, key, repo, version string) string {
	t.Helper()
	publisher := "gpg-signer.asc"
	if version == "2.0.0-rc1" {
		publisher = "gocrypto-signer.asc"
	}
	out := mustRun(t, "push", "provider", "--json", "--key", testenv.Testdata(t, "keys", publisher),
		"--attest-key", key, testenv.Testdata(t, "providers", "hello", version), repo)
	return jsonField(t, out, "digest")
}

func sameActions(got, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// A registry that refuses deletes (Distribution with deletes disabled
// answers 405 UNSUPPORTED, GHCR 403 DENIED) is named with what to do;
// nothing is deleted and nothing crashes.
func TestPruneRegistryRefusingDeletes(t *testing.T) {
	for _, refusal := range []struct {
		status int
		code   string
	}{{http.StatusMethodNotAllowed, "UNSUPPORTED"}, {http.StatusForbidden, "DENIED"}} {
		t.Run(refusal.code, func(t *testing.T) {
			reg := testenv.StartRegistry(t)
			front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{
				Match: func(r *http.Request) bool { return r.Method == http.MethodDelete },
				Fault: testenv.ErrorAnswer(refusal.status, refusal.code, "deletes are not allowed"),
			}}})
			key, _ := ecdsaKeyPair(t)
			repo := front.Host + "/providers/test/hello"
			for _, v := range []string{"1.0.0", "1.1.0"} {
				pushAttested(t, key, repo, v)
			}
			r := registryRepo(t, reg, "providers/test/hello")
			before := sortedTags(t, r)
			res, out, err := runPrune(t, "--apply", "--keep-newest", "1", repo)
			if err == nil {
				t.Fatalf("prune --apply succeeded against a registry refusing deletes:\n%s", out)
			}
			for _, want := range []string{"the registry " + front.Host + " refuses to delete", "enable deletes", "GHCR"} {
				if !strings.Contains(out, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "panic") {
				t.Errorf("prune crashed:\n%s", out)
			}
			if got := actions(res); got["1.0.0"] != "failed" || got["1.1.0"] != "keep" {
				t.Errorf("actions %v, want 1.0.0 failed, 1.1.0 kept\n%s", got, out)
			}
			if after := sortedTags(t, r); !slices.Equal(after, before) {
				t.Errorf("a refused prune changed the tags: %v, were %v", after, before)
			}
		})
	}
}
