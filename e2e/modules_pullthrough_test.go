package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// moduleOrigin is an origin module registry whose versions live in a git
// server (a repository with tags and a subdirectory module) and on an
// archive site, and a trap site no fetch may ever reach.
type moduleOrigin struct {
	reg   *testenv.ModuleRegistry
	git   *testenv.GitServer
	files *testenv.FileSite
	trap  *testenv.FileSite
	// trees are the module trees each registry version holds, by
	// "NAMESPACE/NAME/SYSTEM VERSION".
	trees map[string]string
	// gitURL is the greeting repository's URL, commits its commits (the
	// tags v1.0.0 and v1.1.0).
	gitURL  string
	commits []string
}

// greetingTree is the greeting fixture, its greeting naming version.
func greetingTree(t *testing.T, version string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "greeting")
	testenv.MustRun(t, "", nil, "cp", "-r", testenv.Testdata(t, "modules", "greeting"), dir)
	main := filepath.Join(dir, "main.tf")
	b, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main, []byte(strings.Replace(string(b), `"Hello, `, `"Hello from `+version+`, `, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startModuleOrigin publishes acme/greeting/aws 1.0.0 (git tag v1.0.0)
// and 1.1.0 (annotated tag v1.1.0), acme/shout/aws 1.0.0 (the git
// repository's modules/shout at v1.0.0) and acme/archived/aws 1.0.0 (a
// tar.gz).
func startModuleOrigin(t *testing.T) *moduleOrigin {
	t.Helper()
	o := &moduleOrigin{
		reg:   testenv.StartModuleRegistry(t, testenv.OriginOptions{}),
		git:   testenv.StartGitServer(t, testenv.OriginOptions{}),
		files: testenv.StartFileSite(t, testenv.OriginOptions{}),
		trap:  testenv.StartFileSite(t, testenv.OriginOptions{}),
		trees: map[string]string{},
	}
	v1, v11 := greetingTree(t, "1.0.0"), greetingTree(t, "1.1.0")
	url, commits := o.git.AddRepo(t, "greeting", testenv.GitCommit{Tree: v1, Tags: []string{"v1.0.0"}}, testenv.GitCommit{Tree: v11, Tags: []string{"a:v1.1.0"}})
	o.gitURL, o.commits = url, commits
	o.publish("acme/greeting/aws", "1.0.0", "git::"+url+"?ref=v1.0.0", v1)
	o.publish("acme/greeting/aws", "1.1.0", "git::"+url+"?ref=v1.1.0", v11)
	o.publish("acme/shout/aws", "1.0.0", "git::"+url+"//modules/shout?ref=v1.0.0", filepath.Join(v1, "modules", "shout"))
	archived := greetingTree(t, "archived")
	o.publish("acme/archived/aws", "1.0.0", o.files.Put(t, "archived-1.0.0.tar.gz", testenv.TarGzDir(t, archived, "")), archived)
	t.Cleanup(func() {
		if n := len(o.trap.Requests()); n != 0 {
			t.Errorf("the site outside the allow-list was reached %d times: %v", n, o.trap.Requests())
		}
	})
	return o
}

func (o *moduleOrigin) publish(module, version, location, tree string) {
	o.reg.Set(module, version, testenv.ModuleAnswer{Location: location})
	o.trees[module+" "+version] = tree
}

// serveArgs are serve's flags for pulling modules through from o into
// reg's "pulled" repositories, which the origin's paths and the proxy's
// own share (no ${hostname}; TestOwnModulesAreNotConfusedWithTheOrigin).
func (o *moduleOrigin) serveArgs(reg *testenv.Registry, extra ...string) []string {
	return append([]string{
		"--module-template", reg.Host + "/pulled/${namespace}/${name}/${system}", "--pull-through-shared-repositories",
		"--pull-through-module-origin", o.reg.Host,
		"--pull-through-own-modules", "acme/*/*",
		"--registry-hostname", "127.0.0.1", // as moduleHost names the proxy
		"--pull-through-module-source", o.git.Host,
		"--pull-through-module-source", o.files.Host,
	}, extra...)
}

const modulePullConfig = `
module "greeting" {
  source  = "%[1]s/acme/greeting/aws"
  version = "~> 1.0"
  name    = "pulled"
}

module "shout" {
  source  = "%[1]s/acme/shout/aws"
  version = "1.0.0"
  text    = "from a subdirectory"
}

module "archived" {
  source  = "%[1]s/acme/archived/aws"
  version = "1.0.0"
}
`

// First installs with tofu and terraform through the proxy's Module
// Registry Protocol fetch each module version from its origin (git over
// HTTPS, with a tag, an annotated tag and a subdirectory; a tar.gz) and
// install it; the registry then holds each with the very digest `push
// module` gives for the same tree. With the origin registry and the git
// server stopped, an install in a fresh directory succeeds from the
// registry, and the outage shows in the log and the metrics.
func TestPullThroughModules(t *testing.T) {
	isolateCache(t)
	o := startModuleOrigin(t)
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.new(t, "")
			reg := testenv.StartRegistry(t)
			s := startServe(t, o.serveArgs(reg, "--tag-ttl", "1s", "--pull-through-listing-ttl", "1s", "--max-stale", "-1s")...)
			host := moduleHost(s)
			cfg := map[string]string{"main.tf": fmt.Sprintf(modulePullConfig, host)}
			packs := o.git.UploadPacks()
			out := cli.Run(t, testenv.WriteConfig(t, cfg), "init", "-input=false", "-no-color")
			for _, want := range []string{"acme/greeting/aws 1.1.0 for greeting", "acme/shout/aws 1.0.0 for shout", "acme/archived/aws 1.0.0 for archived"} {
				if !strings.Contains(out, want) {
					t.Errorf("init output lacks %q:\n%s", want, out)
				}
			}
			if n := o.git.UploadPacks() - packs; n != 2 {
				t.Errorf("%d git fetches, want 2 (greeting 1.1.0, shout 1.0.0)", n)
			}
			for _, mv := range []string{"acme/greeting/aws 1.1.0", "acme/shout/aws 1.0.0", "acme/archived/aws 1.0.0"} {
				module, version, _ := strings.Cut(mv, " ")
				got := tagDigest(t, reg, "pulled/"+module, version)
				want := pushModule(t, o.trees[mv], reg.Host+"/pushed/"+module+":"+version).Digest
				if got == "" || got != want {
					t.Errorf("%s: the registry holds %q, push module gives %s for the same tree", mv, got, want)
				}
				checkStoredInterface(t, reg.Host+"/pulled/"+module+":"+version, reg.Host+"/pushed/"+module+":"+version)
			}

			o.reg.Stop()
			o.git.Stop()
			o.files.Stop()
			defer func() { o.reg.Start(t); o.git.Start(t); o.files.Start(t) }()
			// Once the origin's listing and the proxy's documents have
			// expired, listings answer what the registry holds.
			time.Sleep(2100 * time.Millisecond)
			dir := testenv.WriteConfig(t, cfg)
			out = cli.Run(t, dir, "init", "-input=false", "-no-color")
			if !strings.Contains(out, "acme/greeting/aws 1.1.0 for greeting") {
				t.Errorf("init during the outage:\n%s", out)
			}
			got := readTree(t, filepath.Join(dir, ".terraform", "modules", "greeting"))
			if !strings.Contains(got["main.tf"], `"Hello from 1.1.0, `) {
				t.Errorf("installed greeting during the outage: %v", keys(got))
			}
			if strings.Contains(s.logs.String(), "status=5") {
				t.Errorf("the proxy answered 5xx:\n%s", s.logs.String())
			}
			waitForLog(t, s, "listing only what the registry holds")
			if code, body := s.get(t, "/v1/modules/acme/other/aws/versions"); code != http.StatusBadGateway || !strings.Contains(string(body), "unreachable") {
				t.Errorf("a module the registry does not hold, with the origin down: %d %s", code, body)
			}
			_, metrics := s.get(t, "/metrics")
			if !strings.Contains(string(metrics), `oci_tofu_proxy_pullthrough_listings_without_origin_total{kind="module"}`) {
				t.Errorf("metrics do not count the module listings answered without the origin")
			}
		})
	}
}

// 20 concurrent first installs through the proxy cause one git fetch per
// module version, counted at the git server.
func TestPullThroughModulesConcurrent(t *testing.T) {
	isolateCache(t)
	o := startModuleOrigin(t)
	reg := testenv.StartRegistry(t)
	s := startServe(t, o.serveArgs(reg)...)
	cfg := map[string]string{"main.tf": fmt.Sprintf(`
module "greeting" {
  source  = "%[1]s/acme/greeting/aws"
  version = "1.0.0"
}
module "shout" {
  source  = "%[1]s/acme/shout/aws"
  version = "1.0.0"
  text    = "x"
}
`, moduleHost(s))}
	var wg sync.WaitGroup
	errs := make([]error, 20)
	outs := make([]string, 20)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = testenv.Tofu(t, "").Try(t, testenv.WriteConfig(t, cfg), "init", "-input=false", "-no-color")
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("install %d: %v\n%s", i, err, outs[i])
		}
	}
	if n := o.git.UploadPacks(); n != 2 {
		t.Errorf("%d git fetches for 20 concurrent installs, want 2 (one per module version)", n)
	}
	if n := strings.Count(s.logs.String(), "pull-through: module fetched, packed and stored"); n != 2 {
		t.Errorf("%d modules stored, want 2", n)
	}
}

// Download answers pointing outside the allow-list, at 127.0.0.1 on
// another port, or at an allowed host redirecting there, are refused and
// never reached (the trap site's log stays empty); hostile trees from the
// origin (zip-slip, a symbolic link leaving the tree, a 2 GB file,
// 200,000 files) are refused; none leaves a tag.
func TestPullThroughModulesRefused(t *testing.T) {
	isolateCache(t)
	o := startModuleOrigin(t)
	trapPort := strings.TrimPrefix(o.trap.Host, "localhost:")
	trapped := o.trap.Put(t, "m.tar.gz", testenv.TarGzDir(t, greetingTree(t, "trap"), ""))
	linked := greetingTree(t, "linked")
	if err := os.Symlink("../../../../etc/passwd", filepath.Join(linked, "passwd")); err != nil {
		t.Fatal(err)
	}
	linkURL, _ := o.git.AddRepo(t, "linked", testenv.GitCommit{Tree: linked, Tags: []string{"v1.0.0"}})
	fanOutURL, _ := o.git.AddRepo(t, "fanout", testenv.GitCommit{Tree: linkFanOutTree(t, 30), Tags: []string{"v1.0.0"}})
	many := make([]testenv.TarEntry, 200_000)
	unnamed := make([]testenv.TarEntry, 100_001)
	for i := range many {
		many[i] = testenv.TarEntry{Name: fmt.Sprintf("f/%06d.tf", i)}
	}
	for i := range unnamed {
		unnamed[i] = testenv.TarEntry{Name: "./", Dir: true}
	}
	hostile := map[string][]testenv.TarEntry{
		"slip":    {{Name: "main.tf"}, {Name: "../../evil.tf", Data: []byte("x")}},
		"sparse":  {{Name: "main.tf"}, {Name: "big.bin", DeclaredSize: 2 << 30}},
		"many":    many,
		"unnamed": unnamed,
	}
	cases := map[string]string{
		"outside":  trapped,
		"loopback": "https://127.0.0.1:" + trapPort + "/m.tar.gz",
		"redirect": o.files.Redirect("away.tar.gz", "https://127.0.0.1:"+trapPort+"/m.tar.gz"),
		"symlink":  "git::" + linkURL + "?ref=v1.0.0",
		"fanout":   "git::" + fanOutURL + "?ref=v1.0.0",
		"hugelink": "git::" + hugeLinkRepo(t, o.git) + "?ref=v1.0.0",
		"treefan":  "git::" + treeFanOutRepo(t, o.git) + "?ref=v1.0.0",
	}
	// why is what the proxy's log must say of each refusal.
	why := map[string]string{
		"outside":  o.trap.Host + "/m.tar.gz is not on the allow-list",
		"loopback": "127.0.0.1:" + trapPort + "/m.tar.gz is not on the allow-list",
		"redirect": "127.0.0.1:" + trapPort + "/m.tar.gz is not on the allow-list",
		"symlink":  "points outside the module directory",
		"slip":     "leaves the tree",
		"sparse":   "declares 2147483648 bytes",
		"many":     "more than 100000 entries",
		"unnamed":  "more than 100000 entries",
		"fanout":   "the walk followed more than 10000 symbolic links",
		"hugelink": "declares 68157440 bytes, more than the 67108864",
		"treefan":  "the tree has more than 200000 entries",
	}
	// bounded are the cases whose work is bounded before it grows: each
	// refused in well under a second of the proxy's work on an idle
	// machine (the packages' tests count the work; here the git server's
	// packing counts too). The bound below leaves room for a loaded
	// machine; unbounded, the walks would run into the 30-minute
	// --pull-through-timeout, and the log would name no bound.
	bounded := map[string]bool{"fanout": true, "hugelink": true, "treefan": true}
	for name, entries := range hostile {
		cases[name] = o.files.Put(t, name+".tar.gz", testenv.CraftTarGz(t, entries...))
	}
	for name, loc := range cases {
		o.reg.Set("acme/"+name+"/aws", "1.0.0", testenv.ModuleAnswer{Location: loc})
	}
	reg := testenv.StartRegistry(t)
	s := startServe(t, o.serveArgs(reg)...)
	cli := testenv.Tofu(t, "")
	for name := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := fmt.Sprintf("module %q {\n  source  = \"%s/acme/%s/aws\"\n  version = \"1.0.0\"\n}\n", name, moduleHost(s), name)
			out, err := cli.Try(t, testenv.WriteConfig(t, map[string]string{"main.tf": cfg}), "init", "-input=false", "-no-color")
			if err == nil {
				t.Fatalf("init succeeded:\n%s", out)
			}
			if !strings.Contains(out, "502 Bad Gateway") {
				t.Errorf("init output does not show the proxy's 502:\n%s", out)
			}
			if !logLine(s, "module=acme/"+name+"/aws", "failure=refused", why[name]) {
				t.Errorf("the proxy's log does not say module %s was refused because %q", name, why[name])
			}
			if took := pullDuration(s, "module=acme/"+name+"/aws"); bounded[name] && took > 30*time.Second {
				t.Errorf("the refusal took %s", took)
			}
			if d := tagDigest(t, reg, "pulled/acme/"+name+"/aws", "1.0.0"); d != "" {
				t.Errorf("tagged %s", d)
			}
			// tofu asked twice; the failure is remembered, the origin asked once.
			if n := o.reg.Count(func(p string) bool { return p == "/v1/modules/acme/"+name+"/aws/1.0.0/download" }); n != 1 {
				t.Errorf("the origin's download answer was asked %d times, want 1 (the failure remembered)", n)
			}
		})
	}
	_, metrics := s.get(t, "/metrics")
	if want := `oci_tofu_proxy_pullthrough_releases_total{kind="module",result="refused"} 11`; !strings.Contains(string(metrics), want) {
		t.Errorf("metrics lack %s", want)
	}
}

// linkFanOutTree is a module whose directories d1…dN each hold two
// symbolic links, a and b, to the one before: 2^N paths to walk.
func linkFanOutTree(t *testing.T, n int) string {
	dir := greetingTree(t, "fanout")
	if err := os.Mkdir(filepath.Join(dir, "d0"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "d0", ".keep"), nil, 0o644) // git keeps no empty directory
	for k := 1; k <= n; k++ {
		d := filepath.Join(dir, fmt.Sprintf("d%d", k))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, l := range []string{"a", "b"} {
			if err := os.Symlink(fmt.Sprintf("../d%d", k-1), filepath.Join(d, l)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// hugeLinkRepo is a repository whose v1.0.0 holds a symbolic link whose
// target is 65 MiB of zeros (a pack of some 100 KiB).
func hugeLinkRepo(t *testing.T, g *testenv.GitServer) string {
	r := g.NewRepo(t, "hugelink")
	main := r.Blob(strings.NewReader("# main\n"))
	target := r.Blob(io.LimitReader(zeroReader{}, 65<<20))
	r.Commit(r.Tree(testenv.GitEntry{Mode: "100644", ID: main, Name: "main.tf"}, testenv.GitEntry{Mode: "120000", ID: target, Name: "huge"}), "v1.0.0")
	return r.URL
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// treeFanOutRepo is a repository whose v1.0.0 holds a tree of 40 levels,
// each holding the level below twice: 41 small trees, 2^40 paths.
func treeFanOutRepo(t *testing.T, g *testenv.GitServer) string {
	r := g.NewRepo(t, "treefan")
	level := r.Tree(testenv.GitEntry{Mode: "100644", ID: r.Blob(strings.NewReader("x")), Name: "x.tf"})
	for range 40 {
		level = r.Tree(testenv.GitEntry{Mode: "040000", ID: level, Name: "a"}, testenv.GitEntry{Mode: "040000", ID: level, Name: "b"})
	}
	main := r.Blob(strings.NewReader("# main\n"))
	r.Commit(r.Tree(testenv.GitEntry{Mode: "100644", ID: main, Name: "main.tf"}, testenv.GitEntry{Mode: "040000", ID: level, Name: "d"}), "v1.0.0")
	return r.URL
}

// pullDuration is the duration the proxy logged for the pull whose log
// line holds want (0 when there is none).
func pullDuration(s *served, want string) time.Duration {
	for _, line := range strings.Split(s.logs.String(), "\n") {
		if !strings.Contains(line, want) || !strings.Contains(line, "module not stored") {
			continue
		}
		for _, field := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(field, "duration="); ok {
				d, _ := time.ParseDuration(v)
				return d
			}
		}
	}
	return 0
}

// logLine reports whether one line of the proxy's log holds all of want.
func logLine(s *served, want ...string) bool {
	for _, line := range strings.Split(s.logs.String(), "\n") {
		all := true
		for _, w := range want {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

// serve --attest-key with module pull-through and --require-attestation
// of the same key: the module stored carries an attestation cosign
// accepts, recording the origin registry, the source URL and the commit
// the tag resolved to; a fresh install is served from the registry,
// admitted.
func TestPullThroughModulesAttested(t *testing.T) {
	isolateCache(t)
	o := startModuleOrigin(t)
	reg := testenv.StartRegistry(t)
	key, pub := ecdsaKeyPair(t)
	s := startServe(t, o.serveArgs(reg, "--attest-key", key, "--require-attestation", pub)...)
	cfg := map[string]string{"main.tf": fmt.Sprintf("module \"g\" {\n  source  = \"%s/acme/greeting/aws\"\n  version = \"1.1.0\"\n}\n", moduleHost(s))}
	for range 2 {
		out := testenv.Tofu(t, "").Run(t, testenv.WriteConfig(t, cfg), "init", "-input=false", "-no-color")
		if !strings.Contains(out, "acme/greeting/aws 1.1.0 for g") {
			t.Fatalf("not installed:\n%s", out)
		}
	}
	d := tagDigest(t, reg, "pulled/acme/greeting/aws", "1.1.0")
	var p modulepkg.Predicate
	if got := attested(t, pub, reg.Host+"/pulled/acme/greeting/aws@"+d, modulepkg.PredicateType, &p); got != d {
		t.Errorf("subject %s, want %s", got, d)
	}
	src := p.Source
	if src.Kind != "directory" || src.Origin != o.reg.Host || src.URL != "git::"+o.gitURL+"?ref=v1.1.0" || src.Commit != o.commits[1] || src.TreeDigest == "" {
		t.Errorf("predicate source %+v, want origin %s, url git::%s?ref=v1.1.0, commit %s", src, o.reg.Host, o.gitURL, o.commits[1])
	}
	if p.Manifest != d || len(p.Tags) != 1 || p.Tags[0] != "1.1.0" {
		t.Errorf("predicate %+v", p)
	}
	if n := o.git.UploadPacks(); n != 1 {
		t.Errorf("%d git fetches, want 1", n)
	}
}

// `oci-tofu mirror` of modules: the registry module calls of a
// configuration (and of its local modules) and --module arguments are
// fetched from the origin and packed as `push module` packs them; a second
// run fetches nothing; then, with the origin down and pull-through off,
// tofu and terraform install the configuration through the proxy.
func TestMirrorModules(t *testing.T) {
	isolateCache(t)
	o := startModuleOrigin(t)
	reg := testenv.StartRegistry(t)
	origin := strings.Replace(o.reg.Host, "localhost", "127.0.0.1", 1)
	calls := func(host string) map[string]string {
		return map[string]string{
			"main.tf": fmt.Sprintf(modulePullConfig, host),
			// A local module calling a registry module.
			"local/main.tf": fmt.Sprintf("module \"inner\" {\n  source  = \"%s/acme/shout/aws\"\n  version = \">= 1.0\"\n  text    = \"inner\"\n}\n", host),
			"local.tf":      "module \"local\" {\n  source = \"./local\"\n}\n",
		}
	}
	template := reg.Host + "/mirrored/${namespace}/${name}/${system}"
	args := []string{"mirror", "--json", "--module-template", template, "--module-source", o.git.Host, "--module-source", o.files.Host}
	out := mustRun(t, append(args, "--modules-from", testenv.WriteConfig(t, calls(origin)), "--module", origin+"/acme/greeting/aws@1.0.0")...)
	var res struct {
		OK      bool
		Results []struct{ Module, Version, Digest, Error string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || !res.OK {
		t.Fatalf("mirror: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, r := range res.Results {
		got[r.Module+" "+r.Version] = r.Digest
	}
	for _, mv := range []string{"acme/greeting/aws 1.1.0", "acme/greeting/aws 1.0.0", "acme/shout/aws 1.0.0", "acme/archived/aws 1.0.0"} {
		module, version, _ := strings.Cut(mv, " ")
		want := pushModule(t, o.trees[mv], reg.Host+"/pushed/"+module+":"+version).Digest
		if got[origin+"/"+mv] != want || tagDigest(t, reg, "mirrored/"+module, version) != want {
			t.Errorf("%s: mirrored %q, push module gives %s (results %v)", mv, got[origin+"/"+mv], want, got)
		}
		checkStoredInterface(t, reg.Host+"/mirrored/"+module+":"+version, reg.Host+"/pushed/"+module+":"+version)
	}
	packs := o.git.UploadPacks()
	out = mustRun(t, append(args, "--modules-from", testenv.WriteConfig(t, calls(origin)))...)
	if o.git.UploadPacks() != packs || strings.Count(out, `"skipped": true`) != 4 {
		t.Errorf("a second mirror fetched again (%d git fetches before, %d after):\n%s", packs, o.git.UploadPacks(), out)
	}

	o.reg.Stop()
	o.git.Stop()
	o.files.Stop()
	s := startServe(t, "--module-template", template)
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			dir := testenv.WriteConfig(t, calls(moduleHost(s)))
			out := c.new(t, "").Run(t, dir, "init", "-input=false", "-no-color")
			for _, want := range []string{"acme/greeting/aws 1.1.0 for greeting", "acme/shout/aws 1.0.0 for local.inner", "acme/archived/aws 1.0.0 for archived"} {
				if !strings.Contains(out, want) {
					t.Errorf("init output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// The policy with module pull-through and module mirroring: a
// version it denies is left out of the merged listing, never fetched from
// the origin (its download answer is never asked), and not mirrored.
func TestPullThroughModulesPolicy(t *testing.T) {
	isolateCache(t)
	o := startModuleOrigin(t)
	reg := testenv.StartRegistry(t)
	pol := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(pol, []byte("module \"*/acme/greeting/aws\" {\n  deny = [\"1.1.0\"]\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, o.serveArgs(reg, "--policy", pol)...)
	cfg := fmt.Sprintf("module \"g\" {\n  source  = \"%s/acme/greeting/aws\"\n  version = \"~> 1.0\"\n}\n", moduleHost(s))
	out := testenv.Tofu(t, "").Run(t, testenv.WriteConfig(t, map[string]string{"main.tf": cfg}), "init", "-input=false", "-no-color")
	if !strings.Contains(out, "acme/greeting/aws 1.0.0 for g") {
		t.Errorf("init did not pick 1.0.0, the newest version the policy allows:\n%s", out)
	}
	if code, body := s.get(t, "/v1/modules/acme/greeting/aws/1.1.0/download"); code != http.StatusNotFound || !strings.Contains(string(body), "policy") {
		t.Errorf("download of the denied version: %d %s", code, body)
	}
	if code, body := s.get(t, "/v1/modules/acme/greeting/aws/versions"); code != 200 || strings.Contains(string(body), "1.1.0") {
		t.Errorf("versions: %d %s", code, body)
	}
	if n := o.reg.Count(func(p string) bool { return strings.HasSuffix(p, "/1.1.0/download") }); n != 0 {
		t.Errorf("the origin was asked for the denied version %d times", n)
	}
	if d := tagDigest(t, reg, "pulled/acme/greeting/aws", "1.1.0"); d != "" {
		t.Errorf("the denied version was stored: %s", d)
	}

	origin := strings.Replace(o.reg.Host, "localhost", "127.0.0.1", 1)
	out, err := run(t, "mirror", "--module-template", reg.Host+"/mirrored/${namespace}/${name}/${system}", "--module-source", o.git.Host,
		"--policy", pol, "--module", origin+"/acme/greeting/aws")
	if err != nil || !strings.Contains(out, "denied   "+origin+"/acme/greeting/aws 1.1.0") || !strings.Contains(out, "mirrored "+origin+"/acme/greeting/aws 1.0.0") {
		t.Errorf("mirror with the policy: %v\n%s", err, out)
	}
	if d := tagDigest(t, reg, "mirrored/acme/greeting/aws", "1.1.0"); d != "" {
		t.Errorf("mirror stored the denied version: %s", d)
	}
}

// checkStoredInterface checks that ref, a module package mirror or
// pull-through stored, has its interface stored beside it (show does not
// extract it now), the same as push module stored for the same tree
// (pushed).
func checkStoredInterface(t *testing.T, ref, pushed string) {
	t.Helper()
	if out := mustRun(t, "show", ref); strings.Contains(out, "extracted now") || !strings.Contains(out, "Root module") {
		t.Errorf("show %s:\n%s", ref, out)
	}
	if got, want := mustRun(t, "show", "--json", ref), mustRun(t, "show", "--json", pushed); got != want {
		t.Errorf("the interface stored for %s:\n%s\npush module stored:\n%s", ref, got, want)
	}
}
