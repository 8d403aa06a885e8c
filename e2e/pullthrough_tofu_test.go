package e2e

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opentofu/tofudl"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// startTofuOrigin publishes the OpenTofu fixture releases on a TofuDL origin.
func startTofuOrigin(t *testing.T) *testenv.TofuOrigin {
	t.Helper()
	var dirs []string
	for _, v := range []string{"1.8.0", "1.9.0", "1.10.0-beta1"} {
		dirs = append(dirs, testenv.Testdata(t, "tofu", v))
	}
	return testenv.StartTofuOrigin(t, dirs, testenv.OriginOptions{})
}

// tofuPullArgs are serve's flags for pulling OpenTofu releases through
// from origin into repo, verified with key.
func tofuPullArgs(origin *testenv.TofuOrigin, repo, key string) []string {
	return []string{"--tofu-repository", repo,
		"--pull-through-tofu-api-url", origin.APIURL(),
		"--pull-through-tofu-download-url", origin.DownloadTemplate(),
		"--pull-through-tofu-key", key}
}

func tofuOriginGets(origin *testenv.TofuOrigin, file string) int {
	return origin.Count(func(p string) bool { return strings.HasSuffix(p, "/"+file) })
}

// The reference TofuDL client downloads OpenTofu releases the registry
// does not hold: the proxy lists the origin's releases beside its own,
// fetches a requested one (SHA256SUMS and its signature verified with the
// configured key, each file against SHA256SUMS), streams it and stores it
// exactly as `oci-tofu mirror` does. Twenty concurrent first downloads
// fetch each file once; with the origin stopped, the stored release is
// still served; a tampered archive or a signature by another key fails
// the download and leaves no tag.
func TestPullThroughTofuDL(t *testing.T) {
	origin := startTofuOrigin(t)
	reg := testenv.StartRegistry(t)
	gpgKey := testenv.Testdata(t, "keys", "gpg-signer.asc")
	repo := reg.Host + "/tools/opentofu"
	s := startServe(t, append(tofuPullArgs(origin, repo, gpgKey), "--pull-through-listing-ttl", "1s", "--tag-ttl", "1s", "--max-stale", "-1s")...)
	ctx := context.Background()
	dl := newTofuDL(t, s)

	list, err := dl.ListVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range list {
		ids = append(ids, string(v.ID))
	}
	if !slices.Equal(ids, []string{"1.10.0-beta1", "1.9.0", "1.8.0"}) {
		t.Fatalf("versions listed from the origin: %v", ids)
	}

	// Twenty first downloads of 1.9.0 at once.
	const clients = 20
	var wg sync.WaitGroup
	bins := make([][]byte, clients)
	errs := make([]error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bins[i], errs[i] = newTofuDL(t, s).DownloadVersion(ctx, findVersion(t, list, "1.9.0"), tofudl.PlatformLinux, tofudl.ArchitectureAMD64)
		}()
	}
	wg.Wait()
	want := tofuBinary(t, "1.9.0", "linux_amd64")
	for i := range clients {
		if errs[i] != nil || !bytes.Equal(bins[i], want) {
			t.Fatalf("download %d: %v", i, errs[i])
		}
	}
	pulled := waitForTag(t, reg, "tools/opentofu", "1.9.0")
	for _, f := range []string{"tofu_1.9.0_SHA256SUMS", "tofu_1.9.0_SHA256SUMS.gpgsig", "tofu_1.9.0_linux_amd64.tar.gz", "tofu_1.9.0_darwin_arm64.zip"} {
		if n := tofuOriginGets(origin, f); n != 1 {
			t.Errorf("%s was read from the origin %d times, want once", f, n)
		}
	}
	mustRun(t, "mirror", "--quiet", "--tofu-repository", reg.Host+"/mirrored/opentofu", "--tofu-api-url", origin.APIURL(),
		"--tofu-download-url", origin.DownloadTemplate(), "--tofu-key", gpgKey, "--tofu-versions", "1.9.0")
	if mirrored := tagDigest(t, reg, "mirrored/opentofu", "1.9.0"); mirrored != pulled {
		t.Errorf("pulled 1.9.0 is %s, `oci-tofu mirror` pushes %s", pulled, mirrored)
	}

	// A tampered archive of 1.8.0: the download fails, nothing is tagged.
	origin.Tamper(t, "files/v1.8.0/tofu_1.8.0_linux_amd64.tar.gz", func(b []byte) []byte {
		b[len(b)/2] ^= 1
		return b
	})
	if _, err := newTofuDL(t, s).DownloadVersion(ctx, findVersion(t, list, "1.8.0"), tofudl.PlatformLinux, tofudl.ArchitectureAMD64); err == nil {
		t.Error("tofudl downloaded a tampered release")
	}

	// The origin down: the stored release is served, in a fresh client,
	// and listed; what is not stored is not.
	origin.Stop()
	bin, err := newTofuDL(t, s).DownloadVersion(ctx, findVersion(t, list, "1.9.0"), tofudl.PlatformLinux, tofudl.ArchitectureARM64)
	if err != nil || !bytes.Equal(bin, tofuBinary(t, "1.9.0", "linux_arm64")) {
		t.Fatalf("1.9.0 with the origin down: %v", err)
	}
	waitForLog(t, s, `msg="pull-through: release not stored" kind=tofu release="OpenTofu 1.8.0"`)
	if tagDigest(t, reg, "tools/opentofu", "1.8.0") != "" {
		t.Error("the tampered 1.8.0 was tagged")
	}
	time.Sleep(2100 * time.Millisecond) // the origin's listing expires
	held, err := newTofuDL(t, s).ListVersions(ctx)
	if err != nil || len(held) != 1 || held[0].ID != "1.9.0" {
		t.Errorf("versions with the origin down: %+v, %v", held, err)
	}
	_, metrics := s.get(t, "/metrics")
	for _, w := range []string{
		`oci_tofu_proxy_pullthrough_releases_total{kind="tofu",result="stored"} 1`,
		`oci_tofu_proxy_pullthrough_releases_total{kind="tofu",result="tampered"} 1`,
	} {
		if !strings.Contains(string(metrics), w) {
			t.Errorf("metrics lack %s", w)
		}
	}

	// Signed by another key than the configured one: refused, not stored.
	origin.Start(t)
	wrong := startServe(t, tofuPullArgs(origin, reg.Host+"/wrongkey/opentofu", testenv.Testdata(t, "keys", "other.asc"))...)
	if _, err := newTofuDL(t, wrong).Download(ctx, tofudl.DownloadOptVersion("1.9.0"), tofudl.DownloadOptPlatform(tofudl.PlatformLinux), tofudl.DownloadOptArchitecture(tofudl.ArchitectureAMD64)); err == nil {
		t.Error("a release signed by another key than the configured one was served")
	}
	waitForLog(t, wrong, "signature does not verify")
	assertNoTags(t, reg, reg.Host+"/wrongkey/opentofu")
}
