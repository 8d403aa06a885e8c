package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// lockEnv is what the lock differential suite shares: one registry holding
// every provider and module of the corpus, and one proxy serving them
// through the network mirror, provider registry and module registry
// protocols.
type lockEnv struct {
	reg      *testenv.Registry
	proxy    *served
	template string // the providers' repository template
	// signedZH maps "namespace/type/version" to the zh of every line of
	// the release's signed SHA256SUMS.
	mu       sync.Mutex
	signedZH map[string][]string
	signer   *pgp.Signer
	pubKey   *pgp.Keyring
	client   *oci.Client
}

// generated provider releases: namespace/type → versions (all signed by
// the go-crypto fixture key, on three platforms unless noted).
var generatedProviders = map[string][]string{
	"acme/widgets":     {"1.0.0", "1.2.0", "1.2.5", "1.3.0", "2.0.0", "2.1.0-beta1"},
	"hashicorp/gadget": {"0.9.0", "1.0.0"},
	"acme/tagged":      {"1.0.0", "1.1.0"},
}

var genPlatforms = []string{"darwin_arm64", "linux_amd64", "windows_amd64"}

// manyVersions are the versions of acme/many: forty releases and a few
// pre-releases, more than a registry's first page of tags.
func manyVersions() []string {
	var vs []string
	for major := 1; major <= 4; major++ {
		for minor := 0; minor < 10; minor++ {
			vs = append(vs, fmt.Sprintf("%d.%d.0", major, minor))
		}
	}
	return append(vs, "4.10.0-rc1", "5.0.0-alpha.1", "3.9.1+build.7")
}

func startLockEnv(t *testing.T) *lockEnv {
	t.Helper()
	e := &lockEnv{reg: testenv.StartRegistry(t), signedZH: map[string][]string{}}
	e.template = e.reg.Host + "/providers/${namespace}/${type}"
	var err error
	if e.signer, err = pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc")); err != nil {
		t.Fatal(err)
	}
	if e.pubKey, err = pgp.ReadKeyring("gocrypto", e.signer.Public); err != nil {
		t.Fatal(err)
	}
	if e.client, err = oci.NewClient(oci.Options{CAFile: e.reg.CA.CertFile}); err != nil {
		t.Fatal(err)
	}
	g := new(errgroup.Group)
	g.SetLimit(4)
	for addr, versions := range generatedProviders {
		for _, v := range versions {
			g.Go(func() error { return e.pushGenerated(t, addr, v, genPlatforms, nil) })
		}
	}
	for _, v := range manyVersions() {
		g.Go(func() error { return e.pushGenerated(t, "acme/many", v, []string{"linux_amd64", "darwin_arm64"}, nil) })
	}
	// Tags tofu's oci_mirror reads leniently: "1.2" (listed as 1.2.0,
	// whose tag does not exist), "v1.3.0" and "latest" (not versions).
	g.Go(func() error { return e.pushGenerated(t, "acme/tagged", "1.2.0", genPlatforms, []string{"1.2"}) })
	g.Go(func() error {
		return e.pushGenerated(t, "acme/tagged", "1.3.0", genPlatforms, []string{"v1.3.0", "latest"})
	})
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	pushHello(t, e.reg.Host+"/providers/test/hello", "1.0.0", "1.1.0", "2.0.0-rc1")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1"} {
		e.recordFixtureSums(t, "test/hello", v)
	}
	mustRun(t, "push", "provider", "--quiet", "--unsigned", testenv.Testdata(t, "providers", "inhouse", "0.1.0"), e.reg.Host+"/providers/test/inhouse")
	e.proxy = startServe(t, "--provider-template", e.template, "--module-template", e.reg.Host+"/modules/${namespace}/${name}/${system}")
	e.pushModules(t)
	return e
}

// Host is the proxy as a provider registry host (localhost:PORT).
func (e *lockEnv) Host() string { return e.proxy.Host }

// ModHost is the proxy as a module registry host (127.0.0.1:PORT; module
// addresses need a dot).
func (e *lockEnv) ModHost() string { return moduleHost(e.proxy) }

// expand fills a corpus template: {{HOST}} the proxy's provider host,
// {{MODHOST}} its module host, {{REG}} the OCI registry.
func (e *lockEnv) expand(s string) string {
	return strings.NewReplacer("{{HOST}}", e.Host(), "{{MODHOST}}", e.ModHost(), "{{REG}}", e.reg.Host).Replace(s)
}

// pushGenerated makes a provider release (tiny zips, SHA256SUMS with the
// manifest, signed with the go-crypto fixture key), verifies and pushes it
// as `push provider` does, under tags (its version when none).
func (e *lockEnv) pushGenerated(t *testing.T, addr, version string, platforms, tags []string) error {
	ns, typ, _ := strings.Cut(addr, "/")
	dir := t.TempDir()
	sums, err := writeRelease(dir, typ, version, platforms)
	if err != nil {
		return err
	}
	sig, err := e.signer.Sign(sums, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "terraform-provider-"+typ+"_"+version+"_SHA256SUMS.sig"), sig, 0o644); err != nil {
		return err
	}
	ctx := context.Background()
	rel, err := release.ReadProvider(ctx, dir, release.Options{Keys: []*pgp.Keyring{e.pubKey}})
	if err != nil {
		return err
	}
	repo, err := e.client.Open(oci.Reference{Registry: e.reg.Host, Repository: "providers/" + ns + "/" + typ})
	if err != nil {
		return err
	}
	if len(tags) == 0 {
		_, err = rel.Push(ctx, repo, oci.PushOptions{})
	} else {
		var a *oci.Artifact
		if a, err = rel.Artifact(ctx); err == nil {
			held := oci.Tags{}
			for _, tag := range tags {
				held[tag] = ""
			}
			_, err = oci.Push(ctx, repo, a, held, oci.PushOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("pushing %s %s: %w", addr, version, err)
	}
	e.recordSums(addr+"/"+version, sums)
	return nil
}

// writeRelease writes a provider release directory without its signature
// and returns its SHA256SUMS.
func writeRelease(dir, typ, version string, platforms []string) ([]byte, error) {
	prefix := "terraform-provider-" + typ + "_" + version + "_"
	files := map[string][]byte{prefix + "manifest.json": []byte(`{"version":1,"metadata":{"protocol_versions":["6.0"]}}` + "\n")}
	for _, p := range platforms {
		z, err := providerZip(typ, version, p)
		if err != nil {
			return nil, err
		}
		files[prefix+p+".zip"] = z
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var sums bytes.Buffer
	for _, n := range names {
		sum := sha256.Sum256(files[n])
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), n)
		if err := os.WriteFile(filepath.Join(dir, n), files[n], 0o644); err != nil {
			return nil, err
		}
	}
	return sums.Bytes(), os.WriteFile(filepath.Join(dir, prefix+"SHA256SUMS"), sums.Bytes(), 0o644)
}

// providerZip is a provider package: an executable that tofu finds (it is
// never run) and a README.
func providerZip(typ, version, platform string) ([]byte, error) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	mod := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range []struct {
		name string
		mode fs.FileMode
		body string
	}{
		{"terraform-provider-" + typ + "_v" + version, 0o755, fmt.Sprintf("#!/bin/sh\necho %s %s %s\n", typ, version, platform)},
		{"README.md", 0o644, "Generated provider " + typ + " " + version + " for " + platform + ".\n"},
	} {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: mod}
		h.SetMode(f.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		w.Write([]byte(f.body))
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (e *lockEnv) recordSums(key string, sums []byte) {
	var zh []string
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		zh = append(zh, "zh:"+strings.Fields(line)[0])
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.signedZH[key] = zh
}

func (e *lockEnv) recordFixtureSums(t *testing.T, addr, version string) {
	_, typ, _ := strings.Cut(addr, "/")
	sums, err := os.ReadFile(testenv.Testdata(t, "providers", typ, version, "terraform-provider-"+typ+"_"+version+"_SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	e.recordSums(addr+"/"+version, sums)
}

// signedHashes is the zh of every line of a release's signed SHA256SUMS.
func (e *lockEnv) signedHashes(address, version string) []string {
	parts := strings.Split(address, "/")
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.signedZH[parts[len(parts)-2]+"/"+parts[len(parts)-1]+"/"+version]
}

// netModule is the module the corpus installs from OCI and from the
// proxy's module registry: a package whose own local module requires
// another provider.
const netModule = `
terraform {
  required_providers {
    widgets = {
      source  = "{{HOST}}/acme/widgets"
      version = "~> 1.2.0"
    }
  }
}
module "inner" { source = "./inner" }
`

const netInnerModule = `
resource "gadget_thing" "x" {}
`

func (e *lockEnv) pushModules(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "net")
	writeFiles(t, dir, map[string]string{"main.tf": e.expand(netModule), "inner/main.tf": netInnerModule})
	env := append(os.Environ(), "SSL_CERT_FILE="+e.reg.CA.CertFile, "DOCKER_CONFIG="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	for _, ref := range []string{"/modules/net:1.0.0", "/modules/acme/net/aws:1.0.0", "/modules/acme/net/aws:1.1.0"} {
		testenv.MustRun(t, "", env, ociTofu, "push", "module", "--quiet", dir, e.reg.Host+ref)
	}
}

// writeFiles writes files (relative path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.TrimLeft(body, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// copyTree copies a directory recursively (files, modes and symlinks).
func copyTree(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return to
}

// route is one way a client installs providers from the shared registry.
type route struct {
	name      string
	cliConfig func(e *lockEnv) string
}

// otherHosts are the provider hosts of the corpus besides the proxy's.
var otherHosts = []string{"example.com", "registry.opentofu.org", "registry.terraform.io"}

var (
	// ociMirrorRoute is tofu's native route: one oci_mirror block per
	// hostname (a template without ${hostname} must select one host).
	ociMirrorRoute = route{name: "oci_mirror", cliConfig: func(e *lockEnv) string {
		var b strings.Builder
		b.WriteString("provider_installation {\n")
		for _, h := range append([]string{e.Host()}, otherHosts...) {
			fmt.Fprintf(&b, "  oci_mirror {\n    repository_template = %q\n    include = [%q]\n  }\n", e.template, h+"/*/*")
		}
		return b.String() + "}\n"
	}}
	// proxyRoute goes through the proxy: its registry protocol for
	// providers on its own host, its network mirror for the others.
	// (Neither client can use a network mirror for a host with a port:
	// both resolve "localhost:PORT/ns/type/index.json" as a URL with the
	// scheme "localhost".)
	proxyRoute = route{name: "proxy", cliConfig: func(e *lockEnv) string {
		var include []string
		for _, h := range otherHosts {
			include = append(include, fmt.Sprintf("%q", h+"/*/*"))
		}
		return fmt.Sprintf(`
provider_installation {
  network_mirror {
    url     = "%s/v1/mirror/"
    include = [%s]
  }
  direct {
    include = ["%s/*/*"]
  }
}
`, e.proxy.URL, strings.Join(include, ", "), e.Host())
	}}
)

// routesFor are the routes each client has to OCI: tofu natively
// (oci_mirror) and through the proxy; Terraform only through the proxy.
func routesFor(c tfconfig.Client) []route {
	if c == tfconfig.Terraform {
		return []route{proxyRoute}
	}
	return []route{ociMirrorRoute, proxyRoute}
}

// newCLI returns the client's CLI with a CLI configuration.
func newCLI(t *testing.T, c tfconfig.Client, cliConfig string) *testenv.CLI {
	if c == tfconfig.Terraform {
		return testenv.Terraform(t, cliConfig)
	}
	return testenv.Tofu(t, cliConfig)
}

// readLock reads a lock file that must exist.
func readLock(t *testing.T, dir string) *lockfile.File {
	t.Helper()
	lf, err := lockfile.Read(filepath.Join(dir, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return lf
}

// lockVersions maps each locked address to its version.
func lockVersions(lf *lockfile.File) map[string]string {
	out := map[string]string{}
	for _, p := range lf.Providers {
		out[p.Address] = p.Version
	}
	return out
}

// generatedH1 is the h1 tofu computes for a generated package.
func generatedH1(t *testing.T, typ, version, platform string) string {
	t.Helper()
	b, err := providerZip(typ, version, platform)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	h1, err := pkghash.ZipH1(zr)
	if err != nil {
		t.Fatal(err)
	}
	return h1
}

// missingFrom returns the elements of a missing from b.
func missingFrom(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
