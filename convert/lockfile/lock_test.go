package lockfile_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

var helloKeys = map[string]string{"1.0.0": "gpg-signer.asc", "1.1.0": "gpg-signer.asc", "2.0.0-rc1": "gocrypto-signer.asc"}

// store is an OCI layout per provider, as oci-layout:DIR/${namespace}/${type}
// names them.
type store struct {
	dir    string
	client *oci.Client
}

func newStore(t *testing.T) *store {
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &store{dir: t.TempDir(), client: client}
}

func (s *store) repo(t *testing.T) oci.Repository {
	t.Helper()
	r, err := s.client.Open(oci.Reference{Layout: true, Repository: filepath.Join(s.dir, "test", "hello")})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pushHello verifies a fixture release as `push provider` does and pushes
// it under each of tags (its canonical tag when none are given).
func (s *store) pushHello(t *testing.T, version string, tags ...string) {
	t.Helper()
	ctx := context.Background()
	kr, err := pgp.LoadKeyring(testenv.Testdata(t, "keys", helloKeys[version]))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := release.ReadProvider(ctx, testenv.Testdata(t, "providers", "hello", version), release.Options{Keys: []*pgp.Keyring{kr}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := rel.Artifact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	repo := s.repo(t)
	res, err := oci.Push(ctx, repo, a, nil, oci.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) == 0 {
		tags = []string{version}
	}
	for _, tag := range tags {
		if err := repo.Tag(ctx, res.Root, tag); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *store) options(t *testing.T, c tfconfig.Client, platforms ...string) lockfile.Options {
	t.Helper()
	tpl, err := repotemplate.ParseProviderTemplate("oci-layout:" + s.dir + "/${namespace}/${type}")
	if err != nil {
		t.Fatal(err)
	}
	var ps []names.Platform
	for _, p := range platforms {
		pl, err := names.ParsePlatform(p)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, pl)
	}
	return lockfile.Options{Template: tpl, Platforms: ps, Client: c, NoDownload: true,
		Open: func(ctx context.Context, ref oci.Reference) (oci.ReadOnlyRepository, error) {
			return s.client.OpenReadOnly(ctx, ref)
		}}
}

func requirement(t *testing.T, constraint string) []tfconfig.Requirement {
	t.Helper()
	c, err := names.ParseConstraints(constraint)
	if err != nil {
		t.Fatal(err)
	}
	return []tfconfig.Requirement{{Addr: names.Provider{Hostname: "example.com", Namespace: "test", Type: "hello"}, Constraints: c}}
}

// fixtureHashes are what tofu records for a fixture release installed from
// a signed registry on each of platforms: the h1 of each platform's
// package, computed here from the zip, and a zh for every line of
// SHA256SUMS.
func fixtureHashes(t *testing.T, version string, platforms ...string) []string {
	t.Helper()
	dir := testenv.Testdata(t, "providers", "hello", version)
	sums, err := os.ReadFile(filepath.Join(dir, "terraform-provider-hello_"+version+"_SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		want = append(want, "zh:"+strings.Fields(line)[0])
	}
	for _, p := range platforms {
		h1, err := pkghash.ZipFileH1(filepath.Join(dir, "terraform-provider-hello_"+version+"_"+p+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, h1)
	}
	slices.Sort(want)
	return want
}

func TestLockRecordsEverySignedChecksumLine(t *testing.T) {
	s := newStore(t)
	s.pushHello(t, "1.0.0")
	s.pushHello(t, "1.1.0")
	lf, err := lockfile.Lock(context.Background(), requirement(t, "~> 1.0"), nil, s.options(t, tfconfig.Tofu, "linux_amd64", "darwin_arm64"))
	if err != nil {
		t.Fatal(err)
	}
	got := lf.Providers[0]
	want := fixtureHashes(t, "1.1.0", "darwin_arm64", "linux_amd64")
	if got.Version != "1.1.0" || got.Constraints != "~> 1.0" || !slices.Equal(got.Hashes, want) {
		t.Errorf("got %+v\nwant hashes %v", got, want)
	}
	if len(want) != 5+2 {
		t.Fatalf("the fixture's SHA256SUMS should have 5 lines (4 zips and the manifest): %v", want)
	}
}

// An existing lock is tofu's first choice, and its hashes are carried over
// (only the h1:/zh: ones, as tofu carries them); a release that matches
// none of them is refused.
func TestLockWithExistingLock(t *testing.T) {
	s := newStore(t)
	s.pushHello(t, "1.0.0")
	s.pushHello(t, "1.1.0")
	opts := s.options(t, tfconfig.Tofu, "linux_amd64")
	own := fixtureHashes(t, "1.0.0", "linux_amd64")
	partial := &lockfile.File{Providers: []lockfile.Provider{{
		Address: "example.com/test/hello", Version: "1.0.0",
		Hashes: []string{own[0], "h0:legacy-scheme", "h1:from-another-platform="},
	}, {Address: "example.com/old/unused", Version: "1.0.0"}}}
	lf, err := lockfile.Lock(context.Background(), requirement(t, ">= 1.0"), partial, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(own), "h1:from-another-platform=")
	slices.Sort(want)
	if len(lf.Providers) != 1 || lf.Providers[0].Version != "1.0.0" || !slices.Equal(lf.Providers[0].Hashes, want) {
		t.Errorf("got %+v, want 1.0.0 with %v", lf.Providers, want)
	}

	changed := &lockfile.File{Providers: []lockfile.Provider{{Address: "example.com/test/hello", Version: "1.0.0", Hashes: []string{"zh:0000000000000000000000000000000000000000000000000000000000000000"}}}}
	if _, err := lockfile.Lock(context.Background(), requirement(t, ">= 1.0"), changed, opts); err == nil || !strings.Contains(err.Error(), "match none of the packages") {
		t.Errorf("a changed release was accepted: %v", err)
	}
	outside := &lockfile.File{Providers: []lockfile.Provider{{Address: "example.com/test/hello", Version: "1.0.0"}}}
	if _, err := lockfile.Lock(context.Background(), requirement(t, "~> 1.1"), outside, opts); err == nil || !strings.Contains(err.Error(), "does not match the configured version constraint") {
		t.Errorf("a locked version outside the constraints was accepted: %v", err)
	}
}

// Tags are listed as each client's route to OCI lists them (see
// listVersions): tofu's oci_mirror reads "1.1" as 1.1.0 and then fails on
// the missing tag "1.1.0"; Terraform, through the proxy, sees canonical
// tags only. Neither takes "v2.0.0" or "latest" for a version.
func TestLockTagSemantics(t *testing.T) {
	s := newStore(t)
	s.pushHello(t, "1.0.0", "1.0.0", "v2.0.0", "latest")
	s.pushHello(t, "1.1.0", "1.1")
	for _, tc := range []struct {
		client     tfconfig.Client
		constraint string
		want, err  string
	}{
		{tfconfig.Tofu, ">= 1.0", "", `reads tag "1.1" as version 1.1.0 and selects it, then fails to resolve tag "1.1.0"`},
		{tfconfig.Tofu, "~> 1.0.0", "1.0.0", ""},
		{tfconfig.Tofu, ">= 2.0", "", "no available releases match"},
		{tfconfig.Terraform, ">= 1.0", "1.0.0", ""},
	} {
		lf, err := lockfile.Lock(context.Background(), requirement(t, tc.constraint), nil, s.options(t, tc.client, "linux_amd64"))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s %q: want error %q, got %v", tc.client, tc.constraint, tc.err, err)
		case tc.err == "" && err != nil:
			t.Errorf("%s %q: %v", tc.client, tc.constraint, err)
		case tc.err == "" && lf.Providers[0].Version != tc.want:
			t.Errorf("%s %q: locked %s, want %s", tc.client, tc.constraint, lf.Providers[0].Version, tc.want)
		}
	}
	// With the canonical tag beside it, tofu resolves 1.1.0.
	s.pushHello(t, "1.1.0", "1.1.0")
	lf, err := lockfile.Lock(context.Background(), requirement(t, ">= 1.0"), nil, s.options(t, tfconfig.Tofu, "linux_amd64"))
	if err != nil || lf.Providers[0].Version != "1.1.0" {
		t.Errorf("with both tags: %v %v", lf, err)
	}
}

func TestLockMissingPlatformAndRepository(t *testing.T) {
	s := newStore(t)
	s.pushHello(t, "2.0.0-rc1")
	_, err := lockfile.Lock(context.Background(), requirement(t, "2.0.0-rc1"), nil, s.options(t, tfconfig.Tofu, "windows_amd64"))
	if err == nil || !strings.Contains(err.Error(), "no package for windows_amd64") {
		t.Errorf("missing platform: %v", err)
	}
	reqs := []tfconfig.Requirement{{Addr: names.Provider{Hostname: "example.com", Namespace: "test", Type: "nothing"}}}
	if _, err := lockfile.Lock(context.Background(), reqs, nil, s.options(t, tfconfig.Tofu, "linux_amd64")); err == nil || !strings.Contains(err.Error(), "no repository") {
		t.Errorf("missing repository: %v", err)
	}
}
