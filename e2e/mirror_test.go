package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Mirror from a static origin registry (GnuPG-signed fixtures, TLS) into a
// real registry; tofu installs from it via oci_mirror. A tampered zip or a
// signature by the wrong key makes that provider fail with nothing tagged,
// while the others succeed.
func TestMirrorFromOriginRegistry(t *testing.T) {
	gpgKey := testenv.Testdata(t, "keys", "gpg-signer.asc")
	tampered := copyDir(t, testenv.Testdata(t, "providers", "hello", "1.0.0"))
	appendTo(t, filepath.Join(tampered, "terraform-provider-hello_1.0.0_linux_amd64.zip"), "x")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "test", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.0.0"), Key: gpgKey},
		{Namespace: "test", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.1.0"), Key: gpgKey},
		{Namespace: "evil", Type: "hello", Dir: tampered, Key: gpgKey},
		{Namespace: "wrongkey", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.0.0"), Key: testenv.Testdata(t, "keys", "other.asc")},
	})
	reg := testenv.StartRegistry(t)
	tpl := reg.Host + "/mirror/${namespace}/${type}"
	out, err := run(t, "mirror", "--provider-template", tpl, "--platform", "linux_amd64", "--platform", "darwin_arm64",
		origin.Host+"/test/hello@~> 1.0", origin.Host+"/evil/hello", origin.Host+"/wrongkey/hello")
	if err == nil {
		t.Fatalf("mirror with bad providers succeeded:\n%s", out)
	}
	for _, want := range []string{
		"mirrored " + origin.Host + "/test/hello 1.0.0",
		"mirrored " + origin.Host + "/test/hello 1.1.0",
		"FAILED   " + origin.Host + "/evil/hello 1.0.0",
		"does not match the registry's",
		"FAILED   " + origin.Host + "/wrongkey/hello 1.0.0",
		"signature does not verify",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	assertNoTags(t, reg, reg.Host+"/mirror/evil/hello")
	assertNoTags(t, reg, reg.Host+"/mirror/wrongkey/hello")

	// Incremental: complete versions are skipped without downloading.
	again := mustRun(t, "mirror", "--provider-template", tpl, "--platform", "linux_amd64", "--platform", "darwin_arm64", origin.Host+"/test/hello@~> 1.0")
	if strings.Count(again, "complete ") != 2 {
		t.Errorf("re-run:\n%s", again)
	}

	prov := readProvenance(t, reg, "mirror/test/hello", "1.1.0")
	if prov.Platforms["linux_amd64"].H1 == "" || len(prov.Platforms) != 2 || prov.Protocols[0] != "6.0" {
		t.Errorf("provenance: %+v", prov)
	}

	tofu := testenv.Tofu(t, ociMirrorCLIConfig(tpl, origin.Host+"/*/*"))
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(originConfig, origin.Host, "~> 1.0")})
	tofu.Run(t, dir, "init", "-input=false", "-no-color")
	lock, _ := lockfile.Read(filepath.Join(dir, ".terraform.lock.hcl"))
	entry := lock.Provider(origin.Host + "/test/hello")
	if entry == nil || entry.Version != "1.1.0" || !slices.Contains(entry.Hashes, "zh:"+fixtureZipSHA(t, "1.1.0", "linux_amd64")) {
		t.Fatalf("lock: %+v", lock.Providers)
	}

	// And through the proxy, for clients without oci_mirror: as origin
	// registry, serving the mirrored SHA256SUMS, signature and key, so the
	// client checks the upstream signature end to end. (Not through the
	// network mirror here: tofu cannot build mirror URLs for a provider
	// hostname with a port, like this test origin's.)
	proxy := startServe(t, "--provider-template", tpl)
	viaProxy := testenv.Tofu(t, "")
	dir2 := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(originConfig, proxy.Host, "~> 1.0")})
	out2 := viaProxy.Run(t, dir2, "init", "-input=false", "-no-color")
	if !strings.Contains(out2, "Signed by") && !strings.Contains(out2, "signed by") {
		t.Errorf("tofu did not report a signature check:\n%s", out2)
	}
	e2 := lockEntry(t, dir2, proxy.Host+"/test/hello", "1.1.0")
	if !slices.Contains(e2.Hashes, "zh:"+fixtureZipSHA(t, "1.1.0", "linux_amd64")) || !slices.Contains(e2.Hashes, prov.Platforms["linux_amd64"].H1) {
		t.Fatalf("lock via proxy: %v", e2.Hashes)
	}
}

// With --lockfile: exactly the locked version, and zips must be in the lock.
func TestMirrorFromLockFile(t *testing.T) {
	origin := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	tpl := reg.Host + "/mirror/${namespace}/${type}"
	addr := origin.Host + "/test/hello"
	lockPath := filepath.Join(t.TempDir(), ".terraform.lock.hcl")
	write := func(hashes ...string) {
		lf := &lockfile.File{Providers: []lockfile.Provider{{Address: addr, Version: "1.0.0", Hashes: hashes}}}
		os.WriteFile(lockPath, lf.Bytes(), 0o644)
	}
	write("zh:" + fixtureZipSHA(t, "1.0.0", "darwin_arm64"))
	out, err := run(t, "mirror", "--provider-template", tpl, "--platform", "linux_amd64", "--lockfile", lockPath)
	if err == nil || !strings.Contains(out, "is not in the lock file") {
		t.Fatalf("zip missing from the lock: %v\n%s", err, out)
	}
	assertNoTags(t, reg, reg.Host+"/mirror/test/hello")
	write("zh:"+fixtureZipSHA(t, "1.0.0", "darwin_arm64"), "zh:"+fixtureZipSHA(t, "1.0.0", "linux_amd64"))
	out = mustRun(t, "mirror", "--provider-template", tpl, "--platform", "linux_amd64", "--lockfile", lockPath)
	if !strings.Contains(out, "mirrored "+addr+" 1.0.0") || strings.Contains(out, "1.1.0") {
		t.Fatalf("locked mirror:\n%s", out)
	}
}
