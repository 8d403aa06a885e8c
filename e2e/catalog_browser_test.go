package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// browser is a real headless Chromium driven over the DevTools protocol
// (chromedp), started as chromium() starts it: no sandbox as root, no
// background networking, a fresh profile, any certificate trusted (the
// proxy's comes from the test CA). It stops when the test ends.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found: run `make tools-apt` (make test does), which installs Debian's chromium")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("ignore-certificate-errors", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	return tab
}

// inBrowser runs steps in the browser's tab, failing the test with what
// was being done.
func inBrowser(t *testing.T, tab context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(tab, steps...); err != nil {
		t.Fatalf("in the browser, %s: %v", what, err)
	}
}

// read runs a in the browser's tab and returns its value.
func read[T any](t *testing.T, tab context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(tab, a)
	if err != nil {
		t.Fatalf("in the browser, reading %s: %v", what, err)
	}
	return v
}

// texts is the text of every element selector matches, in document
// order, as a person reads it (innerText).
func texts(t *testing.T, tab context.Context, selector string) []string {
	t.Helper()
	return read(t, tab, selector, chromedp.Evaluate[[]string](`[...document.querySelectorAll(`+jsString(selector)+`)].map(e => e.innerText.trim())`))
}

// text is the text of the first element selector matches (innerText).
func text(t *testing.T, tab context.Context, selector string) string {
	t.Helper()
	return read(t, tab, selector, chromedp.Evaluate[string](`document.querySelector(`+jsString(selector)+`).innerText.trim()`))
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// browserPolicy deprecates greeter 1.0.0.
const browserPolicy = `
module "*/acme/greeter/*" {
  name = "greeter-lifecycle"
  deprecated {
    versions = "1.0.0"
    message  = "greeter 1.0 is end of life: move to 1.1"
  }
}
`

// A person in a real browser: searches the catalogue for an input name
// with the page's own form, opens the module from the results, reads its
// tabs and status badges (the newest served, the older one deprecated by
// the policy), opens the Inputs tab, and copies the usage snippet; a root
// module made of that snippet installs, with real tofu and terraform
// through the proxy, the version the page showed. On a phone's viewport
// the pages do not scroll sideways.
func TestCatalogInABrowser(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	repos := reg.Host + "/modules/acme"
	for _, v := range []string{"1.0.0", "1.1.0"} {
		pushModule(t, writeGreeter(t, v), repos+"/greeter/generic:"+v)
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "main.tf"), []byte("variable \"size\" {\n  type = number\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pushModule(t, other, repos+"/other/generic:2.0.0")
	policy := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(policy, []byte(browserPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--module-template", reg.Host+"/modules/${namespace}/${name}/${system}", "--policy", policy)
	host := moduleHost(s)
	tab := browser(t)

	// Search with the page's form, as a person types it.
	inBrowser(t, tab, "searching the catalogue",
		chromedp.Navigate("https://"+host+"/"),
		chromedp.Click(chromedp.CSS(`a[href$="catalog/"]`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`#q`)),
		chromedp.SendKeys(chromedp.CSS(`#q`), "punctuation"),
		chromedp.Submit(chromedp.CSS(`#q`)),
		chromedp.WaitVisible(chromedp.CSS(`#modules table`)))
	if results := texts(t, tab, `#modules tbody tr`); len(results) != 1 || !strings.Contains(results[0], host+"/acme/greeter/generic") || !strings.Contains(results[0], "punctuation") {
		t.Fatalf("searching for an input name found %q, want greeter alone, saying where", results)
	}

	// Open it from the results: its tabs, its badge, its versions.
	inBrowser(t, tab, "opening the module",
		chromedp.Click(chromedp.CSS(`#modules tbody a`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`#snippet`)))
	if tabs, want := texts(t, tab, `header nav a`), []string{"Usage", "Inputs (3)", "Outputs (1)", "Dependencies", "Resources (0)", "Readme", "Versions (2)"}; !reflect.DeepEqual(tabs, want) {
		t.Errorf("tabs %q, want %q", tabs, want)
	}
	if status := text(t, tab, `#status`); status != "served" {
		t.Errorf("the badge of 1.1.0 reads %q, want served", status)
	}
	if versions := texts(t, tab, `#versions li`); len(versions) != 2 || !strings.HasPrefix(versions[0], "1.1.0 served") ||
		!strings.HasPrefix(versions[1], "1.0.0 deprecated") || !strings.Contains(versions[1], "greeter 1.0 is end of life") {
		t.Errorf("versions read %q", versions)
	}
	page := read(t, tab, "the location", chromedp.Location())
	inBrowser(t, tab, "opening the Inputs tab", chromedp.Click(chromedp.CSS(`header nav a[href="#inputs"]`), chromedp.NodeVisible))
	if location := read(t, tab, "the location", chromedp.Location()); location != page+"#inputs" {
		t.Errorf("the Inputs tab led from %s to %s", page, location)
	}
	if inputs, want := texts(t, tab, `#inputs tbody tr td:first-child`), []string{"name required", "zones required", "punctuation"}; !reflect.DeepEqual(inputs, want) {
		t.Errorf("inputs read %q, want %q", inputs, want)
	}
	snippet := read(t, tab, "the snippet", chromedp.Evaluate[string](`document.querySelector('#snippet').innerText`))
	if !strings.Contains(snippet, `"`+host+`/acme/greeter/generic"`) || !strings.Contains(snippet, `"~> 1.1"`) {
		t.Errorf("the snippet copied:\n%s", snippet)
	}

	// The older version, from the versions list: its badge says why.
	inBrowser(t, tab, "opening 1.0.0",
		chromedp.Click(chromedp.CSS(`#versions a[href$="/1.0.0"]`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`#status`)))
	if status := text(t, tab, `#status`); status != "deprecated: greeter 1.0 is end of life: move to 1.1" {
		t.Errorf("the badge of 1.0.0 reads %q", status)
	}

	// On a phone: nothing wider than the screen.
	for _, u := range []string{"https://" + host + "/catalog/", "https://" + host + "/catalog/?q=punctuation", page} {
		inBrowser(t, tab, "reading "+u+" on a phone",
			chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(3), chromedp.EmulateMobile),
			chromedp.Navigate(u),
			chromedp.WaitVisible(chromedp.CSS(`main`)))
		if w := read(t, tab, "the page's width", chromedp.Evaluate[[2]int](`[window.innerWidth, document.documentElement.scrollWidth]`)); w[0] != 390 || w[1] > w[0] {
			t.Errorf("%s on a 390-pixel screen: %d pixels wide, %d wide to scroll", u, w[0], w[1])
		}
	}

	// The snippet, pasted into a root module, installs that version.
	config := snippet + "\n"
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.new(t, "")
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": config})
			out := cli.Run(t, dir, "init", "-input=false", "-no-color")
			got := installedModules(t, dir)
			if want := [3]string{host + "/acme/greeter/generic", "1.1.0", ".terraform/modules/greeter"}; got["greeter"] != want {
				t.Errorf("modules.json %v, want greeter %v\ninit:\n%s", got, want, out)
			}
		})
	}
}
