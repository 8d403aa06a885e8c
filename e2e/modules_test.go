package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

type pushModuleResult struct {
	Reference    string   `json:"reference"`
	Digest       string   `json:"digest"`
	Tags         []string `json:"tags"`
	ZipDigest    string   `json:"zip_digest"`
	Files        int      `json:"files"`
	Uploaded     int      `json:"uploaded"`
	UpToDate     bool     `json:"up_to_date"`
	Source       string   `json:"source"`
	SourceDigest string   `json:"source_digest"`
}

// isolateCache points the packer's record of earlier packs at a fresh
// directory (it lives in the user cache directory otherwise).
func isolateCache(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	return dir
}

func pushModule(t *testing.T, args ...string) pushModuleResult {
	t.Helper()
	out := mustRun(t, append([]string{"push", "module", "--json"}, args...)...)
	var res pushModuleResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	return res
}

// greetingPackage is what the greeting fixture must pack to: everything but
// examples/ and *.bak, which its .terraformignore leaves out. Values are
// the file content; executables are marked with a trailing "*" on the name.
func greetingPackage(t *testing.T) map[string]string {
	t.Helper()
	want := map[string]string{}
	for _, name := range []string{".terraformignore", "README.md", "main.tf", "modules/shout/main.tf", "scripts/hello.sh"} {
		b, err := os.ReadFile(testenv.Testdata(t, "modules", "greeting", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "scripts/hello.sh" {
			name += "*"
		}
		want[name] = string(b)
	}
	return want
}

// readTree reads the files below dir as greetingPackage describes them.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			t.Errorf("%s is a %v, not a regular file", name, fi.Mode().Type())
		}
		if fi.Mode()&0o100 != 0 {
			name += "*"
		}
		b, err := os.ReadFile(p)
		got[name] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A module pushed by oci-tofu installs natively with real `tofu init` from
// oci:// by tag, by the default tag latest, by digest and with //subdir; the
// installed files are exactly the package's, and the configuration applies.
// No CLI configuration is needed for an anonymous registry: SSL_CERT_FILE
// trusting the registry's CA is enough.
func TestPushModuleThenTofuInstallsFromOCI(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/modules/greeting"
	res := pushModule(t, "--also-tag", "latest", testenv.Testdata(t, "modules", "greeting"), repo+":1.0.0")
	if res.Reference != repo+":1.0.0" || !reflect.DeepEqual(res.Tags, []string{"1.0.0", "latest"}) || res.Files != 5 || res.UpToDate {
		t.Fatalf("unexpected result %+v", res)
	}
	if res.Source != "oci://"+repo+"?tag=1.0.0" || res.SourceDigest != "oci://"+repo+"?digest="+res.Digest {
		t.Fatalf("source hints %q, %q", res.Source, res.SourceDigest)
	}

	tofu := testenv.Tofu(t, "") // no oci_default_credentials or anything else needed
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(`
module "by_tag" {
  source = "oci://%[1]s?tag=1.0.0"
  name   = "tag"
}

module "by_latest" {
  source = "oci://%[1]s"
  name   = "latest"
}

module "by_digest" {
  source = "%[2]s"
  name   = "digest"
}

module "sub" {
  source = "oci://%[1]s//modules/shout?tag=1.0.0"
  text   = "from a subdirectory"
}

output "tag" { value = module.by_tag.greeting }
output "latest" { value = module.by_latest.shouted }
output "digest" { value = module.by_digest.greeting }
output "sub" { value = module.sub.text }
`, repo, res.SourceDigest)})
	out := tofu.Run(t, dir, "init", "-input=false", "-no-color")
	for _, want := range []string{"Downloading oci://" + repo + "?tag=1.0.0 for by_tag", "?digest=" + res.Digest + " for by_digest", "- sub in .terraform/modules/sub/modules/shout"} {
		if !strings.Contains(out, want) {
			t.Errorf("tofu init output lacks %q:\n%s", want, out)
		}
	}

	want := greetingPackage(t)
	for _, m := range []string{"by_tag", "by_latest", "by_digest", "sub"} {
		if m == "sub" {
			// tofu fetches a package once per source and copies it for other
			// module blocks with the same source, skipping dot files.
			want = maps.Clone(want)
			delete(want, ".terraformignore")
		}
		got := readTree(t, filepath.Join(dir, ".terraform", "modules", m))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("module %s installed\n%v\nwant\n%v", m, keys(got), keys(want))
		}
	}
	var manifest struct {
		Modules []struct{ Key, Source, Dir string }
	}
	b, err := os.ReadFile(filepath.Join(dir, ".terraform", "modules", "modules.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{}
	for _, m := range manifest.Modules {
		dirs[m.Key] = filepath.ToSlash(m.Dir)
	}
	if dirs["sub"] != ".terraform/modules/sub/modules/shout" || dirs["by_tag.shout"] != ".terraform/modules/by_tag/modules/shout" {
		t.Errorf("modules.json dirs %v", dirs)
	}

	tofu.Run(t, dir, "apply", "-auto-approve", "-input=false", "-no-color")
	var outputs map[string]struct{ Value string }
	if err := json.Unmarshal([]byte(tofu.Run(t, dir, "output", "-json")), &outputs); err != nil {
		t.Fatal(err)
	}
	for name, value := range map[string]string{"tag": "Hello, tag!", "latest": "HELLO, LATEST", "digest": "Hello, digest!", "sub": "FROM A SUBDIRECTORY"} {
		if outputs[name].Value != value {
			t.Errorf("output %s = %q, want %q", name, outputs[name].Value, value)
		}
	}
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// Pushing is reproducible: the same tree (with other timestamps) or the
// zip it packs to gives the same digest, and a no-change push writes nothing.
func TestPushModuleReproducible(t *testing.T) {
	cache := isolateCache(t)
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/modules/greeting"
	first := pushModule(t, testenv.Testdata(t, "modules", "greeting"), repo+":1.0.0")

	// A copy of the fixture with fresh timestamps, pushed with and without
	// the record of earlier packs.
	cp := filepath.Join(t.TempDir(), "greeting")
	testenv.MustRun(t, "", nil, "cp", "-r", testenv.Testdata(t, "modules", "greeting"), cp)
	for _, args := range [][]string{{"--no-cache"}, nil} {
		again := pushModule(t, append(args, cp, repo+":1.0.0")...)
		if again.Digest != first.Digest || !again.UpToDate || again.ZipDigest != first.ZipDigest || again.Files != first.Files {
			t.Fatalf("re-push %v of the same tree: %+v, first %+v", args, again, first)
		}
	}
	if records, _ := filepath.Glob(filepath.Join(cache, "oci-tofu", "modules", "*.json")); len(records) != 1 {
		t.Fatalf("pack records %v, want one", records)
	}
	// Another tag is pushed even though the tree is known.
	if res := pushModule(t, cp, repo+":2.0.0"); res.UpToDate || res.Digest != first.Digest || res.Uploaded != 0 {
		t.Fatalf("new tag for a known tree: %+v", res)
	}
	// A change that keeps size and timestamps is still seen.
	main := filepath.Join(cp, "main.tf")
	fi, _ := os.Stat(main)
	b, _ := os.ReadFile(main)
	os.WriteFile(main, []byte(strings.Replace(string(b), "Hello", "Howdy", 1)), 0o644)
	os.Chtimes(main, fi.ModTime(), fi.ModTime())
	// (A version is written once: the changed tree replaces 1.0.0 only with --replace.)
	if changed := pushModule(t, "--replace", cp, repo+":1.0.0"); changed.UpToDate || changed.Digest == first.Digest {
		t.Fatalf("a changed tree was taken as unchanged: %+v", changed)
	}

	// Pull the zip as any OCI client would, and push it as a .zip SOURCE.
	pulled := filepath.Join(t.TempDir(), "pulled")
	mustRun(t, "pull", "module", repo+":1.0.0", pulled)
	zipFile := filepath.Join(t.TempDir(), "greeting.zip")
	testenv.MustRun(t, pulled, nil, "zip", "-q", "-r", "-X", zipFile, ".")
	fromZip := pushModule(t, zipFile, repo+":zip")
	if fromZip.Digest == first.Digest {
		t.Fatal("a zip made by zip(1) has different bytes, so it must have a different digest")
	}
	if fromZip.Files != 5 {
		t.Fatalf("zip push: %+v", fromZip)
	}
	// The packed zip itself, pushed byte for byte, gives the packed digest.
	packed := filepath.Join(t.TempDir(), "packed")
	mustRun(t, "push", "module", "--quiet", testenv.Testdata(t, "modules", "greeting"), "oci-layout:"+packed+":1.0.0")
	var index struct{ Manifests []struct{ Digest string } }
	b, _ = os.ReadFile(filepath.Join(packed, "index.json"))
	json.Unmarshal(b, &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Digest != first.Digest {
		t.Fatalf("OCI layout push gave %+v, registry push %s", index, first.Digest)
	}
	blob := filepath.Join(packed, "blobs", "sha256", strings.TrimPrefix(first.ZipDigest, "sha256:"))
	same := pushModule(t, blob, repo+":from-zip")
	if same.Digest != first.Digest || same.ZipDigest != first.ZipDigest {
		t.Fatalf("pushing the packed zip as a file: %+v, want digest %s", same, first.Digest)
	}
}

// pull module round-trips what push module wrote, verifying it, and refuses
// what is not a module package or would overwrite files.
func TestPullModule(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/modules/greeting"
	res := pushModule(t, "--also-tag", "1.0.0+build.5", testenv.Testdata(t, "modules", "greeting"), repo+":1.0.0")
	if !reflect.DeepEqual(res.Tags, []string{"1.0.0", "1.0.0_build.5"}) {
		t.Fatalf("tags %v: '+' must be written as '_'", res.Tags)
	}

	for _, ref := range []string{repo + ":1.0.0", repo + "@" + res.Digest, repo + ":1.0.0_build.5"} {
		out := filepath.Join(t.TempDir(), "m")
		mustRun(t, "pull", "module", "--quiet", ref, out)
		if got := readTree(t, out); !reflect.DeepEqual(got, greetingPackage(t)) {
			t.Errorf("pull %s gave %v", ref, keys(got))
		}
	}

	nonEmpty := t.TempDir()
	os.WriteFile(filepath.Join(nonEmpty, "keep.txt"), []byte("mine"), 0o644)
	if out, err := run(t, "pull", "module", repo+":1.0.0", nonEmpty); err == nil || !strings.Contains(out, "not empty") {
		t.Errorf("pull into a non-empty directory: %v\n%s", err, out)
	}
	missing := filepath.Join(t.TempDir(), "m")
	if out, err := run(t, "pull", "module", repo+":2.0.0", missing); err == nil || !strings.Contains(out, "2.0.0") {
		t.Errorf("pull of a missing tag: %v\n%s", err, out)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Error("a failed pull created its target directory")
	}
	// A provider (an image index) is not a module.
	mustRun(t, "push", "provider", "--quiet", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"),
		testenv.Testdata(t, "providers", "hello", "1.0.0"), reg.Host+"/providers/test/hello")
	if out, err := run(t, "pull", "module", reg.Host+"/providers/test/hello:1.0.0", missing); err == nil || !strings.Contains(out, "image index") {
		t.Errorf("pull of a provider: %v\n%s", err, out)
	}
}

// Mistakes are refused before anything is written, with errors that say
// what to do.
func TestPushModuleRefuses(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	fixture := testenv.Testdata(t, "modules", "greeting")
	escape := t.TempDir()
	os.WriteFile(filepath.Join(escape, "main.tf"), nil, 0o644)
	os.Symlink(testenv.Testdata(t, "modules"), filepath.Join(escape, "outside"))
	noRoot := t.TempDir()
	os.MkdirAll(filepath.Join(noRoot, "a"), 0o755)
	os.WriteFile(filepath.Join(noRoot, "a", "main.tf"), nil, 0o644)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{fixture, reg.Host + "/m:v1.0.0"}, "without the \"v\""},
		{[]string{fixture, reg.Host + "/m:1.0"}, "not a canonical one"},
		{[]string{fixture, reg.Host + "/m"}, "give a tag"},
		{[]string{fixture, reg.Host + "/m@sha256:" + strings.Repeat("0", 64)}, "not a digest"},
		{[]string{"--also-tag", "-bad", fixture, reg.Host + "/m:1.0.0"}, "invalid tag"},
		{[]string{escape, reg.Host + "/m:1.0.0"}, "symbolic link outside ->"},
		{[]string{noRoot, reg.Host + "/m:1.0.0"}, "--allow-no-root"},
		{[]string{filepath.Join(fixture, "main.tf"), reg.Host + "/m:1.0.0"}, "not a readable zip"},
	} {
		out, err := run(t, append([]string{"push", "module"}, tc.args...)...)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("push module %v: want an error containing %q, got %v\n%s", tc.args, tc.want, err, out)
		}
	}
	// Nothing reached the registry.
	if out, err := run(t, "pull", "module", reg.Host+"/m:1.0.0", filepath.Join(t.TempDir(), "x")); err == nil {
		t.Fatalf("a refused push left a tag:\n%s", out)
	}
	// --allow-no-root accepts the package; OpenTofu then uses //a.
	res := pushModule(t, "--allow-no-root", noRoot, reg.Host+"/m:1.0.0")
	if res.Files != 1 {
		t.Fatalf("%+v", res)
	}
}

// A module version is written once, as a provider's: other content under
// an existing version tag is refused, naming both digests, and neither the
// version nor latest moves; a new version moves latest; --replace
// overwrites.
func TestPushModuleVersionWrittenOnce(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/modules/greeting"
	first := pushModule(t, "--also-tag", "latest", testenv.Testdata(t, "modules", "greeting"), repo+":1.4.0")
	changed := filepath.Join(t.TempDir(), "greeting")
	testenv.MustRun(t, "", nil, "cp", "-r", testenv.Testdata(t, "modules", "greeting"), changed)
	os.WriteFile(filepath.Join(changed, "extra.tf"), []byte("# changed\n"), 0o644)

	out, err := run(t, "push", "module", "--also-tag", "latest", changed, repo+":1.4.0")
	if err == nil || !strings.Contains(out, "1.4.0 already holds different content ("+first.Digest) || !strings.Contains(out, "this push is sha256:") || !strings.Contains(out, "--replace") {
		t.Fatalf("other content under 1.4.0: %v\n%s", err, out)
	}
	for _, tag := range []string{"1.4.0", "latest"} {
		if got := craneDigest(t, reg, repo+":"+tag); got != first.Digest {
			t.Fatalf("%s moved to %s after a refused push (was %s)", tag, got, first.Digest)
		}
	}
	next := pushModule(t, "--also-tag", "latest", changed, repo+":1.5.0")
	if got := craneDigest(t, reg, repo+":latest"); got != next.Digest || next.Digest == first.Digest {
		t.Fatalf("latest is %s after pushing 1.5.0 (%s)", got, next.Digest)
	}
	if res := pushModule(t, "--replace", changed, repo+":1.4.0"); res.Digest != next.Digest || res.UpToDate {
		t.Fatalf("--replace: %+v", res)
	}
}

// craneDigest is what ref's tag holds, as crane reads it.
func craneDigest(t *testing.T, reg *testenv.Registry, ref string) string {
	t.Helper()
	env := append(os.Environ(), "SSL_CERT_FILE="+reg.CA.CertFile, "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
	return strings.TrimSpace(testenv.MustRun(t, "", env, testenv.Tool(t, "crane"), "digest", ref))
}
