package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
)

// writeLockFile writes a .terraform.lock.hcl under dir pinning each
// address (as written) at version.
func writeLockFile(t *testing.T, dir, version string, addresses ...string) string {
	t.Helper()
	var b strings.Builder
	for _, a := range addresses {
		fmt.Fprintf(&b, "provider %q {\n  version = %q\n  hashes  = [\"zh:%s\"]\n}\n\n", a, version, strings.Repeat("0", 64))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".terraform.lock.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A lock file pins the repository its address maps to through the
// template, whatever host name it names: the proxy's (with the port
// tofu writes; serve drops it), or registry.terraform.io as terraform
// writes a short address. The ADDRESS and REPOSITORY forms agree, dry
// run and --apply alike, and an entry pinning nothing pruned is named.
func TestPruneKeepLockedOtherHost(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/providers/test/hello"
	pushHello(t, repo, "1.0.0", "1.1.0")
	tpl := reg.Host + "/providers/${namespace}/${type}"
	r := registryRepo(t, reg, "providers/test/hello")

	for _, lock := range []struct{ name, address string }{
		{"proxy registry protocol", "tofu.example.com:8443/test/hello"},
		{"terraform", "registry.terraform.io/test/hello"},
	} {
		t.Run(lock.name, func(t *testing.T) {
			locks := t.TempDir()
			file := writeLockFile(t, filepath.Join(locks, "prod"), "1.0.0", lock.address, "registry.terraform.io/acme/unrelated")
			for _, form := range [][]string{
				{"--provider-template", tpl, "--keep-newest", "1", "--keep-locked", locks, "test/hello"},
				{"--keep-newest", "1", "--keep-locked", locks, repo},
			} {
				res, out, err := runPrune(t, form...)
				if err != nil {
					t.Fatalf("prune %v: %v\n%s", form, err, out)
				}
				want := map[string]string{"1.0.0": "keep", "1.1.0": "keep"}
				if got := actions(res); !sameActions(got, want) || !strings.Contains(out, "pinned by "+file) {
					t.Fatalf("dry run %v: %v, want %v (1.0.0 pinned by %s)\n%s", form, got, want, file, out)
				}
				human, _ := run(t, append([]string{"prune"}, form...)...)
				warnings := warningLines(human)
				if !strings.Contains(warnings, "registry.terraform.io/acme/unrelated") || strings.Contains(warnings, lock.address) {
					t.Errorf("prune %v: the warnings should name the unrelated entry, not %s:\n%s", form, lock.address, human)
				}
			}
			res, out, err := runPrune(t, "--apply", "--provider-template", tpl, "--keep-locked", locks, "test/hello")
			if err != nil {
				t.Fatalf("prune --apply: %v\n%s", err, out)
			}
			if got := actions(res); got["1.0.0"] != "keep" {
				t.Fatalf("prune --apply: %v, want 1.0.0 kept\n%s", got, out)
			}
			if tags := sortedTags(t, r); !strings.Contains(strings.Join(tags, " "), "1.0.0") {
				t.Fatalf("after --apply the tags are %v: 1.0.0 was deleted", tags)
			}
			pushHello(t, repo, "1.1.0") // for the next form
		})
	}
}

// A keep block written as serve matches the address — the proxy's
// registry host, as docs/policy.md tells a new user to write it — keeps
// the version in prune, ADDRESS and REPOSITORY forms, dry run and
// --apply; a keep block matching none of the repositories pruned is an
// error naming its file and line, and nothing is deleted.
func TestPruneKeepByPolicyAsServeSees(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/providers/test/hello"
	pushHello(t, repo, "1.0.0", "1.1.0")
	tpl := reg.Host + "/providers/${namespace}/${type}"
	r := registryRepo(t, reg, "providers/test/hello")
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.hcl")
	if err := os.WriteFile(pol, []byte("provider \"tofu.example.com/test/hello\" {\n  keep { versions = \"1.0.0\" }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, form := range [][]string{
		{"--provider-template", tpl, "--keep-newest", "1", "--policy", pol, "test/hello"},
		{"--keep-newest", "1", "--policy", pol, repo},
	} {
		res, out, err := runPrune(t, form...)
		want := map[string]string{"1.0.0": "keep", "1.1.0": "keep"}
		if got := actions(res); err != nil || !sameActions(got, want) || !strings.Contains(out, "kept by the policy") {
			t.Fatalf("dry run %v: %v, want %v kept by the policy (%v)\n%s", form, got, want, err, out)
		}
	}
	res, out, err := runPrune(t, "--apply", "--provider-template", tpl, "--keep-newest", "1", "--policy", pol, "test/hello")
	if got := actions(res); err != nil || got["1.0.0"] != "keep" {
		t.Fatalf("prune --apply: %v (%v)\n%s", got, err, out)
	}
	if tags := strings.Join(sortedTags(t, r), " "); !strings.Contains(tags, "1.0.0") {
		t.Fatalf("after --apply the tags are %s: 1.0.0 was deleted", tags)
	}

	// With ${hostname} in the template, tofu.example.com/test/hello is
	// another repository: the block keeps nothing here, which is refused.
	hostRepo := reg.Host + "/byhost/example.com/test/hello"
	pushHello(t, hostRepo, "1.0.0", "1.1.0")
	before := sortedTags(t, registryRepo(t, reg, "byhost/example.com/test/hello"))
	out, err = run(t, "prune", "--apply", "--provider-template", reg.Host+"/byhost/${hostname}/${namespace}/${type}", "--keep-newest", "1", "--policy", pol, "example.com/test/hello")
	if err == nil || !strings.Contains(out, pol+":2") || !strings.Contains(out, "matches none") {
		t.Fatalf("a keep block matching none of the targets was not refused naming %s:2 (%v):\n%s", pol, err, out)
	}
	if after := sortedTags(t, registryRepo(t, reg, "byhost/example.com/test/hello")); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("a refused prune changed the tags: %v, were %v", after, before)
	}
}

// warningLines are the lines of out that start with "warning:".
func warningLines(out string) string {
	var w []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "warning:") {
			w = append(w, l)
		}
	}
	return strings.Join(w, "\n")
}

// --keep-downloaded-within alone never deletes a version too new to
// judge by its downloads: one pushed within the period (the time its
// attestation bundles were made) or at a time the registry does not tell
// (pushed without --attest-key). Once the period has passed since its
// push, a version nobody downloaded goes, and one downloaded stays.
func TestPruneKeepDownloadedWithinNewVersions(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key, _ := ecdsaKeyPair(t)
	repo := reg.Host + "/providers/test/hello"
	pushAttested(t, key, repo, "1.0.0")
	pushAttested(t, key, repo, "1.1.0")
	pushHello(t, repo, "2.0.0-rc1") // no attestation: push time unknown
	pushed := time.Now()
	const period = 15 * time.Second
	trail := filepath.Join(t.TempDir(), "audit.log")
	record := func(version string) {
		l, err := audit.Open(audit.Options{Path: trail})
		if err != nil {
			t.Fatal(err)
		}
		l.Record(&audit.Event{Time: time.Now(), Event: audit.EventDownload, Outcome: audit.OutcomeDelivered, Client: "ci",
			Kind: "provider", Address: "localhost/test/hello", Version: version, Repository: repo})
		l.Close()
	}
	record("0.9.0") // another version: the trail exists, the new ones were not downloaded

	res, out, err := runPrune(t, "--apply", "--keep-downloaded-within", period.String(), "--audit-log", trail, repo)
	want := map[string]string{"1.0.0": "keep", "1.1.0": "keep", "2.0.0-rc1": "keep"}
	if got := actions(res); err != nil || !sameActions(got, want) {
		t.Fatalf("prune --apply right after the pushes: %v, want %v (%v)\n%s", got, want, err, out)
	}
	for _, why := range []string{"too new to judge by downloads", "push time unknown"} {
		if !strings.Contains(out, why) {
			t.Errorf("no version is kept as %q:\n%s", why, out)
		}
	}

	time.Sleep(time.Until(pushed.Add(period + time.Second)))
	record("1.1.0")
	res, out, err = runPrune(t, "--apply", "--keep-downloaded-within", period.String(), "--audit-log", trail, repo)
	want = map[string]string{"1.0.0": "deleted", "1.1.0": "keep", "2.0.0-rc1": "keep"}
	if got := actions(res); err != nil || !sameActions(got, want) {
		t.Fatalf("prune --apply once the period has passed: %v, want %v (%v)\n%s", got, want, err, out)
	}
}

// A version pushed without --attest-key, then given an attachment by
// another tool (an SBOM `oras attach` writes, its
// org.opencontainers.image.created the build's source date, months ago,
// as reproducible builds set it) is still of unknown push time: only the
// Sigstore bundles push and pull-through write say when a version was
// pushed. Taking any referrer's created time made the new, never
// downloaded version look old, and --keep-downloaded-within deleted it.
func TestPruneKeepDownloadedWithinIgnoresOtherReferrersTimes(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/providers/test/hello"
	pushHello(t, repo, "1.1.0")
	sbom := filepath.Join(t.TempDir(), "sbom.spdx.json")
	if err := os.WriteFile(sbom, []byte(`{"spdxVersion":"SPDX-2.3"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	mustOras(t, "attach", "--no-tty", "--plain-http=false", "--ca-file", reg.CA.CertFile, "--artifact-type", "application/spdx+json",
		"--annotation", "org.opencontainers.image.created=2020-01-01T00:00:00Z", "--disable-path-validation", repo+":1.1.0", sbom)
	trail := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(audit.Options{Path: trail})
	if err != nil {
		t.Fatal(err)
	}
	l.Record(&audit.Event{Time: time.Now(), Event: audit.EventDownload, Outcome: audit.OutcomeDelivered, Client: "ci",
		Kind: "provider", Address: "localhost/test/hello", Version: "0.9.0", Repository: repo})
	l.Close()

	res, out, err := runPrune(t, "--apply", "--keep-downloaded-within", "720h", "--audit-log", trail, repo)
	if got := actions(res); err != nil || !sameActions(got, map[string]string{"1.1.0": "keep"}) {
		t.Fatalf("prune --apply of a version pushed just now, with an old SBOM attached: %v (%v)\n%s", got, err, out)
	}
}
