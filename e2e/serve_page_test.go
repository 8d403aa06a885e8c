package e2e

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// chromium runs Debian's Chromium headless, as this machine allows it
// (no sandbox as root, no background networking on a closed network, a
// fresh profile), trusting any certificate: the proxy's comes from the
// test CA. It needs no display.
func chromium(t *testing.T, args ...string) []byte {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found: run `make tools-apt` (make test does), which installs Debian's chromium")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--ignore-certificate-errors", "--hide-scrollbars"}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// screenshot renders url at a window size into out/e2e/NAME.png (kept as
// a test artifact) and checks that something was drawn.
func screenshot(t *testing.T, url, name string, width, height int) string {
	t.Helper()
	dir := filepath.Join(testenv.Root(t), "out", "e2e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name+".png")
	os.Remove(file)
	chromium(t, fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+file, url)
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", file, err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height || !drawn(img) {
		t.Errorf("screenshot %s: %v, drawn %v", file, b, drawn(img))
	}
	t.Logf("screenshot: %s", file)
	return file
}

// drawn reports whether an image holds more than one colour.
func drawn(img image.Image) bool {
	b := img.Bounds()
	first := img.At(b.Min.X, b.Min.Y)
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			if img.At(x, y) != first {
				return true
			}
		}
	}
	return false
}

// preText is the text of <pre id="ID"> in a DOM dump, unescaped: what a
// person copies from the page.
func preText(t *testing.T, dom, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<pre id="` + regexp.QuoteMeta(id) + `"><code>(.*?)</code></pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the page has no <pre id=%q>:\n%s", id, dom)
	}
	return html.UnescapeString(m[1])
}

// The page at the proxy's base URL, in a real browser: it renders (a
// screenshot at desktop and phone widths is kept under out/e2e), shows
// the mappings and what was served (versions, platforms, signed), and its
// snippets are what the proxy serves: the network_mirror and oci_mirror
// blocks, copied verbatim into real tofu's CLI configuration, and the
// Terraform network_mirror block into real terraform's, install the
// provider.
func TestServePageInBrowser(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/example.com/test/hello", "1.0.0", "1.1.0")
	mustRun(t, "push", "module", "--quiet", testenv.Testdata(t, "modules", "greeting"), reg.Host+"/modules/acme/greeting/aws:1.0.0")
	cfg := filepath.Join(t.TempDir(), "tofu.rc")
	os.WriteFile(cfg, []byte(`provider_installation {
  oci_mirror {
    repository_template = "`+reg.Host+`/providers/${hostname}/${namespace}/${type}"
    include             = ["example.com/*/*"]
  }
}
`), 0o644)
	s := startServe(t, "--config", cfg, "--module-template", reg.Host+"/modules/${namespace}/${name}/${system}")

	// Clients ask; the page shows what they were served.
	for _, path := range []string{"/v1/mirror/example.com/test/hello/index.json", "/v1/mirror/example.com/test/hello/1.1.0.json", "/v1/modules/acme/greeting/aws/versions"} {
		if code, body := s.get(t, path); code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}

	start := time.Now()
	dom := string(chromium(t, "--dump-dom", s.URL+"/"))
	for _, want := range []string{
		"oci-tofu proxy", "serving; no registry failure since start",
		"example.com/<wbr>test/<wbr>hello", "<strong>1.1.0</strong>", "darwin_arm64, linux_amd64, linux_arm64, windows_amd64", `<span class="ok">signed</span>`,
		"acme/<wbr>greeting/<wbr>aws", "--module-template", "include <code>example.com/*/*</code>",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	t.Logf("rendered in %s", time.Since(start).Round(time.Millisecond))
	if mirrorDom := string(chromium(t, "--dump-dom", s.URL+"/v1/mirror/")); !strings.Contains(mirrorDom, `id="tofu-network-mirror"`) {
		t.Errorf("the mirror's base URL does not answer the page:\n%s", mirrorDom)
	}
	screenshot(t, s.URL+"/", "proxy-page", 1200, 2400)
	screenshot(t, s.URL+"/", "proxy-page-phone", 390, 2400)

	// The snippets, verbatim, in real tofu.
	mirror := preText(t, dom, "tofu-network-mirror")
	if !strings.Contains(mirror, `url = "`+s.URL+`/v1/mirror/"`) || !strings.Contains(mirror, "trust_all_hashes = true") {
		t.Errorf("network_mirror snippet:\n%s", mirror)
	}
	if tf := preText(t, dom, "terraform-network-mirror"); strings.Contains(tf, "trust_all_hashes") {
		t.Errorf("Terraform's snippet has OpenTofu's trust_all_hashes:\n%s", tf)
	}
	ociMirror := preText(t, dom, "tofu-oci-mirror")
	for name, cliConfig := range map[string]string{"network_mirror": mirror, "oci_mirror": ociMirror} {
		dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "~> 1.0")})
		out := testenv.Tofu(t, cliConfig).Run(t, dir, "init", "-input=false", "-no-color")
		if !strings.Contains(out, "Installed example.com/test/hello v1.1.0") {
			t.Errorf("tofu with the page's %s snippet:\n%s\n%s", name, cliConfig, out)
		}
	}
	// Terraform, with its own snippet.
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "~> 1.0")})
	if out := testenv.Terraform(t, preText(t, dom, "terraform-network-mirror")).Run(t, dir, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed example.com/test/hello v1.1.0") {
		t.Errorf("terraform with the page's snippet:\n%s", out)
	}
	if reg := preText(t, dom, "registry"); !strings.Contains(reg, `source = "`+s.Host+`/`) {
		t.Errorf("registry snippet:\n%s", reg)
	}
}

// With client authentication on, the page shows health and client
// configuration (with a credentials block), not the mappings or what
// was served; unknown paths answer 404.
func TestServePageWithClientAuth(t *testing.T) {
	reg := testenv.StartRegistry(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte("a-client-token-of-some-length\n"), 0o600)
	s := startServe(t, "--provider-template", reg.Host+"/secret-path/${namespace}/${type}", "--auth-token-file", tokens)
	code, body := s.get(t, "/")
	page := string(body)
	if code != 200 || strings.Contains(page, "secret-path") || !strings.Contains(page, "Client authentication is on") || !strings.Contains(page, `credentials &#34;`+s.Host+`&#34;`) {
		t.Errorf("page with client auth: %d\n%s", code, page)
	}
	if code, _ := s.get(t, "/nosuch"); code != 404 {
		t.Errorf("/nosuch: %d", code)
	}
}

// The page's snippets for a proxy reached as localhost with a template
// without ${hostname}: its oci_mirror block (with the include tofu then
// needs) and its module call (on 127.0.0.1: module registry hosts need a
// dot) work verbatim in real tofu, and the module call in real terraform.
// They were tofu's error text, and a source both clients refuse.
func TestServePageSnippetsWorkInClients(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
	mustRun(t, "push", "module", "--quiet", testenv.Testdata(t, "modules", "greeting"), reg.Host+"/modules/acme/network/aws:1.0.0")
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}",
		"--module-template", reg.Host+"/modules/${namespace}/${name}/${system}")
	code, body := s.get(t, "/")
	if code != 200 {
		t.Fatalf("page: %d", code)
	}
	page := string(body)

	ociMirror := preText(t, page, "tofu-oci-mirror")
	if !strings.Contains(ociMirror, `include = ["registry.opentofu.org/*/*"]`) {
		t.Errorf("oci_mirror snippet:\n%s", ociMirror)
	}
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": "terraform {\n  required_providers {\n    hello = { source = \"registry.opentofu.org/test/hello\" }\n  }\n}\n"})
	if out := testenv.Tofu(t, ociMirror).Run(t, dir, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed test/hello v1.0.0") {
		t.Errorf("tofu with the page's oci_mirror snippet:\n%s\n%s", ociMirror, out)
	}

	module := preText(t, page, "modules")
	if !strings.Contains(module, `source  = "127.0.0.1:`) {
		t.Errorf("module snippet for a proxy reached as localhost:\n%s", module)
	}
	for name, cli := range map[string]*testenv.CLI{"tofu": testenv.Tofu(t, ""), "terraform": testenv.Terraform(t, "")} {
		dir := testenv.WriteConfig(t, map[string]string{"main.tf": module})
		out, err := cli.Try(t, dir, "init", "-input=false", "-no-color", "-backend=false")
		if err != nil || !strings.Contains(out, "acme/network/aws 1.0.0") {
			t.Errorf("%s with the page's module snippet: %v\n%s\n%s", name, err, module, out)
		}
	}
}
