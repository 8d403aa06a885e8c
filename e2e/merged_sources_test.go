package e2e

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Two oci_mirror blocks admitting one provider, served with `serve
// --config`, merge as tofu merges them when it reads the same file (the
// oracle): the versions of both blocks; a version both hold with
// different content comes from the first block, through the proxy as
// with tofu reading the registry itself.
func TestServeConfigMergesBlocksAsTofu(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	push := func(dir, repo string) {
		mustRun(t, "push", "provider", "--quiet", "--key", key, dir, reg.Host+"/"+repo+"/example.com/acme/widgets")
	}
	push(signedProviderDir(t, "widgets", "1.0.0"), "first")
	push(variantProviderDir(t, "widgets", "1.0.0"), "second")
	push(signedProviderDir(t, "widgets", "1.1.0"), "second")
	cfg := fmt.Sprintf(`
provider_installation {
  oci_mirror {
    repository_template = "%[1]s/first/${hostname}/${namespace}/${type}"
    include             = ["example.com/acme/*"]
  }
  oci_mirror {
    repository_template = "%[1]s/second/${hostname}/${namespace}/${type}"
  }
}
`, reg.Host)
	file := filepath.Join(t.TempDir(), "tofu.rc")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--config", file)

	// 1.0.0, held by both blocks with different builds: the first
	// block's, through the proxy as straight from the registry.
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": widgetsConfig("example.com/acme/widgets", "1.0.0")})
	testenv.Tofu(t, networkMirrorConfig(s)).Run(t, dir, "init", "-input=false", "-no-color")
	proxied := lockEntry(t, dir, "example.com/acme/widgets", "1.0.0")
	os.RemoveAll(filepath.Join(dir, ".terraform"))
	os.Remove(filepath.Join(dir, ".terraform.lock.hcl"))
	testenv.Tofu(t, cfg).Run(t, dir, "init", "-input=false", "-no-color")
	direct := lockEntry(t, dir, "example.com/acme/widgets", "1.0.0")
	for _, h := range direct.Hashes {
		if strings.HasPrefix(h, "h1:") && !slices.Contains(proxied.Hashes, h) {
			t.Errorf("tofu with the oci_mirror blocks installed 1.0.0 as %s, which the proxy's install did not lock: %v", h, proxied.Hashes)
		}
	}

	// ">= 1.0": both list 1.1.0, held by the second block alone. The proxy
	// serves it from there; tofu 1.12.6 lists it too but then asks the
	// first block for it and stops at its "not found" (docs/proxy.md says
	// so; this subtest notices when tofu changes).
	dir = testenv.WriteConfig(t, map[string]string{"main.tf": widgetsConfig("example.com/acme/widgets", ">= 1.0")})
	testenv.Tofu(t, networkMirrorConfig(s)).Run(t, dir, "init", "-input=false", "-no-color")
	lockEntry(t, dir, "example.com/acme/widgets", "1.1.0")
	dir = testenv.WriteConfig(t, map[string]string{"main.tf": widgetsConfig("example.com/acme/widgets", ">= 1.0")})
	out, err := testenv.Tofu(t, cfg).Try(t, dir, "init", "-input=false", "-no-color")
	if err == nil || !strings.Contains(out, "v1.1.0") || !strings.Contains(out, "first/example.com/acme/widgets:1.1.0: not found") {
		t.Errorf("tofu with the same blocks no longer fails on a version only the second block holds (update docs/proxy.md):\n%s", out)
	}
}

// variantProviderDir is signedProviderDir with other package contents:
// another build of the same version.
func variantProviderDir(t *testing.T, typ, version string) string {
	t.Helper()
	dir := t.TempDir()
	prefix := "terraform-provider-" + typ + "_" + version + "_"
	var sums bytes.Buffer
	for _, p := range genPlatforms {
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		h := &zip.FileHeader{Name: "terraform-provider-" + typ + "_v" + version, Method: zip.Deflate, Modified: time.Date(2024, 2, 2, 0, 0, 0, 0, time.UTC)}
		h.SetMode(0o755)
		w, _ := zw.CreateHeader(h)
		fmt.Fprintf(w, "#!/bin/sh\necho another build of %s %s %s\n", typ, version, p)
		zw.Close()
		sum := sha256.Sum256(b.Bytes())
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), prefix+p+".zip")
		if err := os.WriteFile(filepath.Join(dir, prefix+p+".zip"), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.Sign(sums.Bytes(), time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, prefix+"SHA256SUMS"), sums.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, prefix+"SHA256SUMS.sig"), sig, 0o644)
	return dir
}
