package e2e

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// The demo provider (testenv.DemoProviderSource), a real Go provider
// binary linking modules at known versions, and the vulnerability
// database its SBOMs are matched against: what the SBOM and
// vulnerability tests share.

// vulnFixtureDB is convert/vulns' fixture database, in the Go
// vulnerability database's layout (convert/vulns/testdata/README.md):
// GO-2022-1059 affects the golang.org/x/text v0.3.7 the demo provider
// links.
func vulnFixtureDB(t *testing.T) string {
	return filepath.Join(testenv.Root(t), "convert", "vulns", "testdata", "db")
}

var sbomDemoPlatforms = []string{"linux_amd64", "darwin_arm64"}

// sbomDemoRelease builds the demo provider for sbomDemoPlatforms and
// writes its signed release 1.0.0 (gocrypto-signer's key, signed at
// signed): the directory, and each platform's binary.
func sbomDemoRelease(t *testing.T, signed time.Time) (string, map[string]string) {
	t.Helper()
	bins := demoProviderBinaries(t)
	return demoProviderRelease(t, bins, "1.0.0", signed), bins
}

// demoProviderBinaries builds the demo provider for sbomDemoPlatforms:
// each platform's binary.
func demoProviderBinaries(t *testing.T) map[string]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the demo provider")
	}
	src := t.TempDir()
	testenv.DemoProviderSource(t, src)
	bins := map[string]string{}
	for _, p := range sbomDemoPlatforms {
		goos, goarch, _ := strings.Cut(p, "_")
		bin := filepath.Join(src, p, "terraform-provider-demo")
		cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOWORK=off", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building the demo provider: %v\n%s", err, out)
		}
		bins[p] = bin
	}
	return bins
}

// demoProviderRelease writes a signed release of the demo provider
// (gocrypto-signer's key, signed at signed) as version, its zips holding
// bins (demoProviderBinaries): the directory.
func demoProviderRelease(t *testing.T, bins map[string]string, version string, signed time.Time) string {
	t.Helper()
	dir := t.TempDir()
	sums := sha256sums.Sums{}
	for _, p := range sbomDemoPlatforms {
		name := "terraform-provider-demo_" + version + "_" + p + ".zip"
		writeZipOf(t, filepath.Join(dir, name), "terraform-provider-demo_v"+version, bins[p])
		sums[name] = fileSHA256(t, filepath.Join(dir, name))
	}
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.Sign(sums.Bytes(), signed)
	if err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(dir, "terraform-provider-demo_"+version+"_SHA256SUMS")
	if err := os.WriteFile(prefix, sums.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prefix+".sig", sig, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeZipOf(t *testing.T, path, name, from string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := zip.NewWriter(f)
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	h.SetMode(0o755)
	fw, err := w.CreateHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
