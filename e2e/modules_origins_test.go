package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Two origin module registries stand in for registry.opentofu.org and
// registry.terraform.io (HOST=URL names each one's modules.v1 on its test
// server); the hosts their download answers name are the sources.
func twoOriginArgs(reg *testenv.Registry, opentofu, terraform *moduleOrigin) []string {
	args := []string{
		"--module-template", reg.Host + "/pulled/${hostname}/${namespace}/${name}/${system}",
		"--pull-through-module-origin", "registry.opentofu.org=https://" + opentofu.reg.Host + "/v1/modules/",
		"--pull-through-module-origin", "registry.terraform.io=https://" + terraform.reg.Host + "/v1/modules/",
	}
	for _, o := range []*moduleOrigin{opentofu, terraform} {
		for _, h := range []string{o.reg.Host, o.git.Host, o.files.Host} {
			args = append(args, "--pull-through-module-source", h)
		}
	}
	return args
}

// originHostBlocks is the CLI configuration sending each origin's module
// addresses to the proxy at base (as docs/guide-pull-through.md, "Modules", shows it).
func originHostBlocks(base string, origins ...string) string {
	var b strings.Builder
	for _, o := range origins {
		fmt.Fprintf(&b, "host %q {\n  services = {\n    \"modules.v1\" = \"%s/v1/origins/%s/modules/\"\n  }\n}\n", o, base, o)
	}
	return b.String()
}

// The configuration names modules as a configuration written for the
// public registries does: a short address (the client's default registry:
// registry.opentofu.org for tofu, registry.terraform.io for terraform) and
// addresses naming either registry.
const twoOriginConfig = `
module "greeting" {
  source  = "acme/greeting/aws"
  version = "1.1.0"
  name    = "two origins"
}

module "shout" {
  source  = "registry.terraform.io/acme/shout/aws"
  version = "1.0.0"
  text    = "from the terraform registry"
}

module "archived" {
  source  = "registry.opentofu.org/acme/archived/aws"
  version = "1.0.0"
}
`

// One proxy pulls modules through from two origin registries: real tofu
// and terraform, their module addresses unchanged and a host block each
// pointing the two registries' modules.v1 at the proxy (the proxy page's
// snippet), install modules
// of both origins. Each version is fetched from the origin its address
// names (each origin's download endpoint and git server count only its
// own), stored under that origin's hostname with the digest `push
// module` gives, and fetched once.
func TestPullThroughModulesTwoOrigins(t *testing.T) {
	isolateCache(t)
	opentofu, terraform := startModuleOrigin(t), startModuleOrigin(t)
	reg := testenv.StartRegistry(t)
	s := startServe(t, twoOriginArgs(reg, opentofu, terraform)...)
	// The clients' CLI configuration is the page's snippet, verbatim.
	_, page := s.get(t, "/")
	cliConfig := preText(t, string(page), "module-origins")
	for _, want := range []string{
		`"modules.v1"   = "` + s.URL + `/v1/origins/registry.opentofu.org/modules/"`,
		`"providers.v1" = "https://registry.terraform.io/v1/providers/"`,
	} {
		if !strings.Contains(cliConfig, want) {
			t.Errorf("the page's host blocks lack %s:\n%s", want, cliConfig)
		}
	}
	downloads := func(o *moduleOrigin, module string) int {
		return o.reg.Count(func(p string) bool {
			return strings.HasPrefix(p, "/v1/modules/"+module+"/") && strings.HasSuffix(p, "/download")
		})
	}
	// tofu's short address is registry.opentofu.org's, terraform's
	// registry.terraform.io's.
	greetingFrom := map[string]*moduleOrigin{"tofu": opentofu, "terraform": terraform}
	greetingRepo := map[string]string{"tofu": "registry.opentofu.org", "terraform": "registry.terraform.io"}
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			from := greetingFrom[c.name]
			packs := from.git.UploadPacks()
			out := c.new(t, cliConfig).Run(t, testenv.WriteConfig(t, map[string]string{"main.tf": twoOriginConfig}), "init", "-input=false", "-no-color")
			for _, want := range []string{"acme/greeting/aws 1.1.0 for greeting", "acme/shout/aws 1.0.0 for shout", "acme/archived/aws 1.0.0 for archived"} {
				if !strings.Contains(out, want) {
					t.Errorf("init output lacks %q:\n%s", want, out)
				}
			}
			if n := downloads(from, "acme/greeting/aws"); n != 1 {
				t.Errorf("the greeting's origin was asked for its download %d times, want 1", n)
			}
			if from.git.UploadPacks() != packs+1 {
				t.Errorf("the greeting's git server served %d fetches, want 1", from.git.UploadPacks()-packs)
			}
			for repo, mv := range map[string]string{
				greetingRepo[c.name] + "/acme/greeting/aws": "acme/greeting/aws 1.1.0",
				"registry.terraform.io/acme/shout/aws":      "acme/shout/aws 1.0.0",
				"registry.opentofu.org/acme/archived/aws":   "acme/archived/aws 1.0.0",
			} {
				module, version, _ := strings.Cut(mv, " ")
				got := tagDigest(t, reg, "pulled/"+repo, version)
				want := pushModule(t, opentofu.trees[mv], reg.Host+"/pushed/"+module+":"+version).Digest
				if got == "" || got != want {
					t.Errorf("%s: the registry holds %q, push module gives %s for the same tree", repo, got, want)
				}
			}
		})
	}
	// Each origin was asked only for the modules addressed to it, once.
	for name, got := range map[string]int{
		"registry.terraform.io shout":    downloads(terraform, "acme/shout/aws"),
		"registry.opentofu.org archived": downloads(opentofu, "acme/archived/aws"),
		"registry.opentofu.org shout":    downloads(opentofu, "acme/shout/aws"),
		"registry.terraform.io archived": downloads(terraform, "acme/archived/aws"),
	} {
		want := 1
		if strings.HasSuffix(name, "opentofu.org shout") || strings.HasSuffix(name, "terraform.io archived") {
			want = 0
		}
		if got != want {
			t.Errorf("%s: %d download answers asked, want %d", name, got, want)
		}
	}
	// Each origin fails on its own: with registry.terraform.io's registry
	// and git server down, what the registry holds of it installs, and a
	// module registry.opentofu.org publishes now is pulled through.
	terraform.reg.Stop()
	terraform.git.Stop()
	defer func() { terraform.reg.Start(t); terraform.git.Start(t) }()
	opentofu.publish("acme/later/aws", "1.0.0", "git::"+opentofu.gitURL+"?ref=v1.0.0", opentofu.trees["acme/greeting/aws 1.0.0"])
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": twoOriginConfig +
		"module \"later\" {\n  source  = \"registry.opentofu.org/acme/later/aws\"\n  version = \"1.0.0\"\n}\n"})
	out := testenv.Tofu(t, cliConfig).Run(t, dir, "init", "-input=false", "-no-color")
	for _, want := range []string{"acme/shout/aws 1.0.0 for shout", "acme/later/aws 1.0.0 for later"} {
		if !strings.Contains(out, want) {
			t.Errorf("with registry.terraform.io down, init output lacks %q:\n%s", want, out)
		}
	}
	if d := tagDigest(t, reg, "pulled/registry.opentofu.org/acme/later/aws", "1.0.0"); d == "" {
		t.Error("registry.opentofu.org's new module was not stored while registry.terraform.io was down")
	}

	// An origin not configured has no paths: nothing is contacted.
	if code, _ := s.get(t, "/v1/origins/elsewhere.example/modules/acme/greeting/aws/versions"); code != http.StatusNotFound {
		t.Errorf("an origin not configured: %d, want 404", code)
	}
}

// A fleet of three replicas sharing state on Redis behind nginx: 20
// concurrent first installs of two module versions, spread over the
// replicas, cause one git fetch per version (counted at the git server).
// With Redis stopped, installs still succeed, each replica fetching on its
// own at most once.
func TestFleetSharesModulePullThroughOnRedis(t *testing.T) {
	isolateCache(t)
	o := startModuleOrigin(t)
	reg := testenv.StartRegistry(t)
	redis := testenv.StartRedis(t)
	f := testenv.StartFleet(t, ociTofu, 3, nil,
		"--module-template", reg.Host+"/pulled/${namespace}/${name}/${system}", "--pull-through-shared-repositories",
		"--pull-through-module-origin", "registry.opentofu.org=https://"+o.reg.Host+"/v1/modules/",
		"--pull-through-module-source", o.reg.Host, "--pull-through-module-source", o.git.Host,
		"--shared-cache", redis.URL(), "--shared-cache-timeout", "2s") // as fleetArgs: a busy machine's Redis may take over 100 ms
	cliConfig := originHostBlocks(f.URL, "registry.opentofu.org")
	install := func(n int, cfg string) {
		t.Helper()
		var wg sync.WaitGroup
		outs, errs := make([]string, n), make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i], errs[i] = testenv.Tofu(t, cliConfig).Try(t, testenv.WriteConfig(t, map[string]string{"main.tf": cfg}), "init", "-input=false", "-no-color")
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("install %d: %v\n%s\nthe replicas' warnings and errors:\n%s", i, err, outs[i], replicaComplaints(f))
			}
		}
	}
	install(20, `
module "greeting" {
  source  = "acme/greeting/aws"
  version = "1.0.0"
}
module "shout" {
  source  = "acme/shout/aws"
  version = "1.0.0"
  text    = "x"
}
`)
	if n := o.git.UploadPacks(); n != 2 {
		// A Redis operation past its bound (100 ms) lets a replica pull on
		// its own, by design: say so when it happened.
		var redisErrors []string
		for _, r := range f.Replicas {
			for _, line := range strings.Split(replicaMetrics(t, f, r), "\n") {
				if strings.HasPrefix(line, "oci_tofu_shared_cache_errors_total{") && !strings.HasSuffix(line, " 0") {
					redisErrors = append(redisErrors, line)
				}
			}
		}
		t.Errorf("%d git fetches for 20 concurrent installs over 3 replicas, want 2 (one per module version); Redis errors counted: %v", n, redisErrors)
	}
	stored, served := 0, 0
	for _, r := range f.Replicas {
		stored += strings.Count(r.Logs.String(), "pull-through: module fetched, packed and stored")
		for _, line := range strings.Split(replicaMetrics(t, f, r), "\n") {
			if strings.HasPrefix(line, `oci_tofu_proxy_requests_total{class="2xx",handler="modules"`) && !strings.HasSuffix(line, " 0") {
				served++
				break
			}
		}
	}
	if stored != 2 {
		t.Errorf("%d module versions stored by the replicas, want 2", stored)
	}
	if served < 2 {
		t.Errorf("only %d replicas answered module requests: nginx did not spread them", served)
	}

	// A record in the shared cache is not trusted: one saying 1.1.0 is
	// stored (1.0.0's record under 1.1.0's key) makes a replica read
	// 1.1.0's tag, which names nothing yet; it logs that, sets the record
	// aside and pulls 1.1.0 itself.
	forgeModuleRecord(t, redis, "1.0.0", "1.1.0")
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": "module \"greeting\" {\n  source  = \"acme/greeting/aws\"\n  version = \"1.1.0\"\n}\n"})
	testenv.Tofu(t, cliConfig).Run(t, dir, "init", "-input=false", "-no-color")
	if got := readTree(t, filepath.Join(dir, ".terraform", "modules", "greeting")); !strings.Contains(got["main.tf"], `"Hello from 1.1.0, `) {
		t.Errorf("installed 1.1.0 with a forged record: %v", keys(got))
	}
	noticed := false
	for _, r := range f.Replicas {
		noticed = noticed || strings.Contains(r.Logs.String(), "does not confirm")
	}
	if !noticed {
		t.Error("no replica noticed the forged record")
	}

	// Redis down: each replica pulls on its own.
	// (A module no replica has listed yet: listings are cached.)
	o.publish("acme/later/aws", "1.0.0", "git::"+o.gitURL+"?ref=v1.0.0", o.trees["acme/greeting/aws 1.0.0"])
	redis.Stop()
	packs := o.git.UploadPacks()
	install(6, "module \"later\" {\n  source  = \"acme/later/aws\"\n  version = \"1.0.0\"\n}\n")
	if n := o.git.UploadPacks() - packs; n < 1 || n > len(f.Replicas) {
		t.Errorf("%d git fetches with Redis stopped, want 1 to %d (each replica on its own, once)", n, len(f.Replicas))
	}
	if d := tagDigest(t, reg, "pulled/acme/later/aws", "1.0.0"); d == "" {
		t.Error("acme/later/aws 1.0.0 was not stored with Redis stopped")
	}
	down := 0
	for _, r := range f.Replicas {
		if strings.Contains(replicaMetrics(t, f, r), "oci_tofu_shared_cache_up 0") {
			down++
		}
	}
	if down == 0 {
		t.Error("no replica's oci_tofu_shared_cache_up says Redis is down")
	}
}

// replicaComplaints are the last warnings and errors the fleet's
// replicas logged, each under its replica: the cause of a failed install,
// where the whole logs printed at the end may be cut short.
func replicaComplaints(f *testenv.Fleet) string {
	var b strings.Builder
	for _, r := range f.Replicas {
		var lines []string
		for _, line := range strings.Split(r.Logs.String(), "\n") {
			if (strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR")) && !strings.Contains(line, "shared cache: the --shared-cache URL") {
				lines = append(lines, line)
			}
		}
		fmt.Fprintf(&b, "%s:\n  %s\n", r.URL, strings.Join(lines[max(0, len(lines)-12):], "\n  "))
	}
	return b.String()
}

// forgeModuleRecord copies the shared cache's record of the greeting's
// version from to the key of version to.
func forgeModuleRecord(t *testing.T, srv *testenv.Redis, from, to string) {
	t.Helper()
	raw, err := redis.DialURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	keys, _ := redis.Strings(raw.Do("KEYS", "oci-tofu:stored module *greeting* "+from))
	if len(keys) != 1 {
		t.Fatalf("stored records of greeting %s: %q", from, keys)
	}
	record, _ := redis.String(raw.Do("GET", keys[0]))
	if _, err := raw.Do("SET", strings.TrimSuffix(keys[0], from)+to, record, "PX", time.Minute.Milliseconds()); err != nil {
		t.Fatal(err)
	}
}

// With client authentication on, a client sends the token it holds for
// the origin's host (the module's address) to the proxy its host block
// names: without it the install is refused; with it tofu 1.12 fetches the
// per-origin archive URL with the token, terraform the signed one.
func TestPullThroughModuleOriginsWithAuth(t *testing.T) {
	isolateCache(t)
	o := startModuleOrigin(t)
	reg := testenv.StartRegistry(t)
	token := "origin-token-0123456789abcdef"
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--module-template", reg.Host+"/pulled/${hostname}/${namespace}/${name}/${system}",
		"--pull-through-module-origin", "registry.opentofu.org=https://"+o.reg.Host+"/v1/modules/",
		"--pull-through-module-source", o.reg.Host, "--pull-through-module-source", o.git.Host,
		"--auth-token-file", tokens)
	hosts := originHostBlocks(s.URL, "registry.opentofu.org")
	cfg := map[string]string{"main.tf": "module \"g\" {\n  source  = \"registry.opentofu.org/acme/greeting/aws\"\n  version = \"1.1.0\"\n}\n"}
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			if out, err := c.new(t, hosts).Try(t, testenv.WriteConfig(t, cfg), "init", "-input=false", "-no-color"); err == nil {
				t.Fatalf("init without credentials succeeded:\n%s", out)
			}
			cli := c.new(t, hosts+fmt.Sprintf("credentials \"registry.opentofu.org\" {\n  token = %q\n}\n", token))
			if out := cli.Run(t, testenv.WriteConfig(t, cfg), "init", "-input=false", "-no-color"); !strings.Contains(out, "acme/greeting/aws 1.1.0 for g") {
				t.Errorf("init with the token:\n%s", out)
			}
		})
	}
	logs := s.logs.String()
	if strings.Contains(logs, token) {
		t.Error("the token is in the proxy's log")
	}
	// tofu: the direct location (200); terraform: the signed URL (204).
	for _, want := range []string{
		"/v1/origins/registry.opentofu.org/modules/acme/greeting/aws/1.1.0/download status=200",
		"/v1/origins/registry.opentofu.org/modules/acme/greeting/aws/1.1.0/download status=204",
		"path=/v1/origins/registry.opentofu.org/module-archives/acme/greeting/aws/1.1.0/",
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("no %q in the proxy's log", want)
		}
	}
	if n := o.git.UploadPacks(); n != 1 {
		t.Errorf("%d git fetches, want 1", n)
	}
}
