package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Hostile input, point by point of the adversarial review: nothing a
// registry, a request, a release directory or a file holds makes the
// proxy or a command panic, hang or publish what tofu cannot install.

// hugeVersions are versions whose numbers go beyond 64 bits: go-versions,
// OpenTofu's version library, panics on them.
var hugeVersions = []string{"99999999999999999999999.0.0", "1.99999999999999999999.0", "1.0.0-rc.99999999999999999999999"}

// assertCleanFailure checks that a command failed as commands should: an
// exit status that is not Go's panic status (2), and no panic trace.
func assertCleanFailure(t *testing.T, out string, err error, want string) {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		t.Errorf("succeeded, want a failure mentioning %q:\n%s", want, out)
	case !errors.As(err, &ee):
		t.Errorf("did not run to its end: %v\n%s", err, out)
	case ee.ExitCode() == 2 || strings.Contains(out, "panic:") || strings.Contains(out, "goroutine "):
		t.Errorf("panicked (exit %d):\n%s", ee.ExitCode(), out)
	case !strings.Contains(out, want):
		t.Errorf("failed without mentioning %q:\n%s", want, out)
	}
}

// assertNoPanic checks that a command, failing or not, did not panic.
func assertNoPanic(t *testing.T, out string, err error) {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 2 || strings.Contains(out, "panic:") || strings.Contains(out, "goroutine ") {
		t.Errorf("panicked (%v):\n%s", err, out)
	}
}

// tagRepo adds tags to what a repository's tag holds, straight in the
// registry (set-up, not under test).
func tagRepo(t *testing.T, reg *testenv.Registry, repoName, from string, tags ...string) {
	t.Helper()
	ctx := context.Background()
	repo := registryRepo(t, reg, repoName)
	desc, err := repo.Resolve(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range tags {
		if err := repo.Tag(ctx, desc, tag); err != nil {
			t.Fatalf("tagging %s: %v", tag, err)
		}
	}
}

// 1. One tag stopped the proxy: versions beyond 64 bits in served
// repositories are left out of listings with a warning, in request paths
// they are 400, and the commands that meet them fail cleanly or skip them.
func TestHostileVersions(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
	mustRun(t, "push", "module", "--quiet", testenv.Testdata(t, "modules", "greeting"), reg.Host+"/modules/acme/greeting/aws:1.0.0")
	hostileTags := append(slices.Clone(hugeVersions), "99999999999999999999999", "1.0.0.0")
	for i, v := range hostileTags {
		hostileTags[i] = strings.ReplaceAll(v, "+", "_")
	}
	tagRepo(t, reg, "providers/test/hello", "1.0.0", hostileTags...)
	tagRepo(t, reg, "modules/acme/greeting/aws", "1.0.0", hostileTags...)
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}",
		"--module-template", reg.Host+"/modules/${namespace}/${name}/${system}")

	t.Run("listings", func(t *testing.T) {
		var index struct{ Versions map[string]any }
		getJSON(t, s, "/v1/mirror/example.com/test/hello/index.json", &index)
		if len(index.Versions) != 1 || index.Versions["1.0.0"] == nil {
			t.Errorf("index.json lists %v, want 1.0.0 alone", index.Versions)
		}
		var versions struct {
			Versions []struct{ Version string }
			Warnings []string
		}
		getJSON(t, s, "/v1/providers/test/hello/versions", &versions)
		if len(versions.Versions) != 1 || versions.Versions[0].Version != "1.0.0" {
			t.Errorf("versions lists %+v, want 1.0.0 alone", versions.Versions)
		}
		if w := strings.Join(versions.Warnings, "\n"); !strings.Contains(w, hugeVersions[0]) {
			t.Errorf("no warning names the tag %s: %q", hugeVersions[0], versions.Warnings)
		}
		var modules struct {
			Modules []struct{ Versions []struct{ Version string } }
		}
		getJSON(t, s, "/v1/modules/acme/greeting/aws/versions", &modules)
		if len(modules.Modules) != 1 || len(modules.Modules[0].Versions) != 1 {
			t.Errorf("module versions: %+v, want 1.0.0 alone", modules)
		}
		if !strings.Contains(s.logs.String(), "look like versions but are none") {
			t.Errorf("no warning in the log")
		}
	})
	t.Run("request-paths", func(t *testing.T) {
		index := strings.Repeat("a", 64)
		for _, v := range hugeVersions {
			for _, path := range []string{
				"/v1/mirror/example.com/test/hello/" + v + ".json",
				"/v1/providers/test/hello/" + v + "/download/linux/amd64",
				"/v1/archives/example.com/test/hello/" + v + "/" + index + "/terraform-provider-hello_" + v + "_linux_amd64.zip",
				"/v1/modules/acme/greeting/aws/" + v + "/download",
			} {
				assertJSONError(t, s, path, 400, 400)
			}
		}
	})
	s.alive(t)

	t.Run("verify", func(t *testing.T) {
		// tofu's oci_mirror leaves out tags that do not parse as versions,
		// so they make no install fail: each is a warning, the run succeeds.
		out, err := run(t, "verify", reg.Host+"/providers/test/hello")
		assertNoPanic(t, out, err)
		if err != nil {
			t.Errorf("verify failed on tags tofu ignores: %v\n%s", err, out)
		}
		for _, tag := range hostileTags {
			if !strings.Contains(out, fmt.Sprintf("warning %s/providers/test/hello:%s: tag %q is not a version", reg.Host, tag, tag)) {
				t.Errorf("no warning for tag %s:\n%s", tag, out)
			}
		}
	})
	t.Run("export", func(t *testing.T) {
		dir := t.TempDir()
		out := mustRun(t, "export", "--provider-template", reg.Host+"/providers/${namespace}/${type}", dir, "example.com/test/hello")
		if _, err := os.Stat(filepath.Join(dir, "example.com", "test", "hello", "1.0.0.json")); err != nil {
			t.Errorf("1.0.0 not exported: %v\n%s", err, out)
		}
	})
	t.Run("push-provider", func(t *testing.T) {
		for _, v := range hugeVersions {
			dir := t.TempDir()
			zip := fmt.Sprintf("terraform-provider-hello_%s_linux_amd64.zip", v)
			copyFile(t, testenv.Testdata(t, "providers", "hello", "1.0.0", "terraform-provider-hello_1.0.0_linux_amd64.zip"), filepath.Join(dir, zip))
			out, err := run(t, "push", "provider", "--unsigned", dir, "oci-layout:"+t.TempDir())
			assertCleanFailure(t, out, err, "too large")
		}
	})
	t.Run("push-module", func(t *testing.T) {
		for _, v := range hugeVersions[:2] {
			out, err := run(t, "push", "module", testenv.Testdata(t, "modules", "greeting"), "oci-layout:"+t.TempDir()+":"+v)
			assertCleanFailure(t, out, err, "too large")
		}
	})
	t.Run("pull-module", func(t *testing.T) {
		// A tag is a tag: it pulls what it names, without panicking.
		out, err := run(t, "pull", "module", reg.Host+"/modules/acme/greeting/aws:"+hugeVersions[0], filepath.Join(t.TempDir(), "m"))
		assertNoPanic(t, out, err)
	})
	t.Run("lock", func(t *testing.T) {
		dir := testenv.WriteConfig(t, map[string]string{
			"main.tf":             fmt.Sprintf(helloConfig, ">= 1.0"),
			".terraform.lock.hcl": fmt.Sprintf("provider %q {\n  version = %q\n}\n", "example.com/test/hello", hugeVersions[0]),
		})
		out, err := run(t, "lock", "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--platform", "linux_amd64", dir)
		assertCleanFailure(t, out, err, "too large")
		// In the configuration: refused with tofu's own diagnostic.
		cfg := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, ">= "+hugeVersions[0])})
		out, err = run(t, "lock", "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--platform", "linux_amd64", cfg)
		assertCleanFailure(t, out, err, "This string does not use correct version constraint syntax.")
	})
}

// 3. Metrics in clients' hands: whatever methods and paths clients send,
// every label of the proxy's metrics takes a value from a closed set, and
// /healthz and /metrics answer GET and HEAD only.
func TestMetricsClosedLabels(t *testing.T) {
	s := startServe(t, "--provider-template", "oci-layout:"+t.TempDir()+"/${namespace}/${type}")
	for _, path := range []string{"/healthz", "/metrics"} {
		for _, m := range []string{"POST", "PUT", "DELETE", "BREW", "PROPFIND"} {
			req, _ := http.NewRequest(m, s.URL+path, nil)
			resp, err := s.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d Allow %q", m, path, resp.StatusCode, resp.Header.Get("Allow"))
			}
		}
	}
	for i := 0; i < 300; i++ {
		method := []string{"GET", "HEAD", "POST", fmt.Sprintf("M%d", i), "OPTIONS"}[i%5]
		path := []string{"/v1/mirror/x/%d", "/random/%d", "/v1/providers/%d/x/versions", "/.well-known/%d", "/v1/archives/%d"}[i%5]
		req, _ := http.NewRequest(method, s.URL+fmt.Sprintf(path, i), nil)
		if resp, err := s.client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	_, body := s.get(t, "/metrics")
	closed := map[string][]string{
		"method":  {"GET", "HEAD", "OTHER"},
		"class":   {"2xx", "3xx", "4xx", "5xx", "aborted"},
		"handler": {"healthz", "metrics", "discovery", "page", "unknown", "mirror", "providers", "archives", "modules", "module_archives", "tofu_api", "tofu_download"},
	}
	label := regexp.MustCompile(`(\w+)="([^"]*)"`)
	series := 0
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "oci_tofu_proxy_requests_total{") {
			continue
		}
		series++
		for _, m := range label.FindAllStringSubmatch(line, -1) {
			if allowed, ok := closed[m[1]]; ok && !slices.Contains(allowed, m[2]) {
				t.Errorf("label %s=%q is not from its closed set: %s", m[1], m[2], line)
			}
		}
	}
	if series == 0 || series > 12*3*5 {
		t.Errorf("%d request series", series)
	}
}

// runWithin runs the binary and fails the test if it takes longer than d
// (a command waiting on a FIFO or reading /dev/zero would never end).
func runWithin(t *testing.T, d time.Duration, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, ociTofu, args...)
	cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+testenv.NewCA(t).CertFile, "DOCKER_CONFIG="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("oci-tofu %s did not finish within %s:\n%s", strings.Join(args, " "), d, out)
	}
	return string(out), err
}

// mkfifo makes a named pipe at p.
func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

// layoutTags lists the tags an OCI layout holds (none when it does not
// exist).
func layoutTags(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Manifests []struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, m := range idx.Manifests {
		if tag := m.Annotations["org.opencontainers.image.ref.name"]; tag != "" {
			tags = append(tags, tag)
		}
	}
	return tags
}

// 4 and 7. Files that are no regular files (a FIFO, a link to /dev/zero)
// are refused at once with their path named, and files beyond the shared
// limits are refused before anything is written, by every command that
// reads them.
func TestHostileFiles(t *testing.T) {
	isolateCache(t)
	helloDir := testenv.Testdata(t, "providers", "hello", "1.0.0")
	linuxZip := "terraform-provider-hello_1.0.0_linux_amd64.zip"
	for _, c := range []struct {
		name string
		// setup returns the command's arguments (the target is appended
		// for pushes).
		setup func(t *testing.T) []string
		want  string
	}{
		{"provider-zip-fifo", func(t *testing.T) []string {
			dir := copyDir(t, helloDir)
			os.Remove(filepath.Join(dir, linuxZip))
			mkfifo(t, filepath.Join(dir, linuxZip))
			return []string{"push", "provider", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), dir}
		}, "named pipe"},
		{"provider-zip-dev-zero", func(t *testing.T) []string {
			dir := copyDir(t, helloDir)
			os.Remove(filepath.Join(dir, linuxZip))
			os.Symlink("/dev/zero", filepath.Join(dir, linuxZip))
			return []string{"push", "provider", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), dir}
		}, "a device"},
		{"provider-sums-fifo", func(t *testing.T) []string {
			dir := copyDir(t, helloDir)
			sums := filepath.Join(dir, "terraform-provider-hello_1.0.0_SHA256SUMS")
			os.Remove(sums)
			mkfifo(t, sums)
			return []string{"push", "provider", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), dir}
		}, "named pipe"},
		{"provider-key-fifo", func(t *testing.T) []string {
			key := filepath.Join(t.TempDir(), "key.asc")
			mkfifo(t, key)
			return []string{"push", "provider", "--key", key, helloDir}
		}, "named pipe"},
		{"provider-zip-over-limit", func(t *testing.T) []string {
			dir := t.TempDir()
			sparse(t, filepath.Join(dir, linuxZip), oci.MaxPackageSize+1)
			return []string{"push", "provider", "--unsigned", dir}
		}, "more than"},
		{"module-file-fifo", func(t *testing.T) []string {
			dir := moduleDir(t)
			mkfifo(t, filepath.Join(dir, "pipe.tf"))
			return []string{"push", "module", "--no-cache", dir}
		}, "pipe.tf"},
		{"module-ignore-fifo", func(t *testing.T) []string {
			dir := moduleDir(t)
			mkfifo(t, filepath.Join(dir, ".terraformignore"))
			return []string{"push", "module", "--no-cache", dir}
		}, "named pipe"},
		{"module-zip-fifo", func(t *testing.T) []string {
			z := filepath.Join(t.TempDir(), "m.zip")
			mkfifo(t, z)
			return []string{"push", "module", z}
		}, "named pipe"},
		{"module-zip-dev-zero", func(t *testing.T) []string {
			z := filepath.Join(t.TempDir(), "m.zip")
			os.Symlink("/dev/zero", z)
			return []string{"push", "module", z}
		}, "a device"},
		{"module-file-over-limit", func(t *testing.T) []string {
			dir := moduleDir(t)
			sparse(t, filepath.Join(dir, "big.bin"), oci.MaxModuleSize+1)
			return []string{"push", "module", "--no-cache", dir}
		}, "more than"},
		{"module-zip-over-limit", func(t *testing.T) []string {
			z := filepath.Join(t.TempDir(), "m.zip")
			sparse(t, z, oci.MaxModuleSize+1)
			return []string{"push", "module", z}
		}, "more than"},
		{"lock-config-fifo", func(t *testing.T) []string {
			dir := t.TempDir()
			mkfifo(t, filepath.Join(dir, "main.tf"))
			return []string{"lock", "--provider-template", "oci-layout:" + t.TempDir() + "/${namespace}/${type}", "--platform", "linux_amd64", dir}
		}, "named pipe"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.setup(t)
			layout := t.TempDir()
			if args[0] == "push" {
				target := "oci-layout:" + layout
				if args[1] == "module" {
					target += ":1.0.0"
				}
				args = append(args, target)
			}
			out, err := runWithin(t, time.Minute, args...) // a hang guard: generous for a loaded machine
			assertCleanFailure(t, out, err, c.want)
			if tags := layoutTags(t, layout); len(tags) > 0 {
				t.Errorf("tags %v written", tags)
			}
		})
	}
}

// moduleDir is a fresh copy-free module directory: one main.tf.
func moduleDir(t *testing.T) string {
	t.Helper()
	return testenv.WriteConfig(t, map[string]string{"main.tf": "variable \"x\" {}\n"})
}

// sparse makes a file of n bytes that takes no room on disk.
func sparse(t *testing.T, p string, n int64) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(n); err != nil {
		t.Fatal(err)
	}
}

// fixtureEntries are the entries of a fixture zip, to build variants of it.
func fixtureEntries(t *testing.T, version, platform string) []testenv.ZipEntry {
	t.Helper()
	zr, err := zip.OpenReader(testenv.Testdata(t, "providers", "hello", version, "terraform-provider-hello_"+version+"_"+platform+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var out []testenv.ZipEntry
	for _, f := range zr.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, testenv.ZipEntry{Name: f.Name, Data: data, Mode: f.Mode()})
	}
	return out
}

// releaseDirWith is a release directory holding one linux_amd64 zip made
// of entries, and nothing else (to be signed with --sign-key or pushed
// --unsigned).
func releaseDirWith(t *testing.T, entries ...testenv.ZipEntry) (dir string, zip []byte) {
	t.Helper()
	dir = t.TempDir()
	zip = testenv.CraftZip(t, entries...)
	if err := os.WriteFile(filepath.Join(dir, "terraform-provider-hello_1.0.0_linux_amd64.zip"), zip, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, zip
}

// 6. Corrupt zips: an entry with a bad CRC or more bytes than it declares
// is refused by push, flagged by verify (when a third-party tool pushed
// it), and — the oracle — refused by tofu itself. A zip with a symbolic-link
// entry, which go-getter unpacks as a file holding the link's target, is
// pushed with the h1 tofu computes.
func TestCorruptZips(t *testing.T) {
	good := fixtureEntries(t, "1.0.0", "linux_amd64")
	corrupt := map[string][]testenv.ZipEntry{}
	for name, mutate := range map[string]func(e *testenv.ZipEntry){
		"bad-crc":     func(e *testenv.ZipEntry) { e.BadCRC = true },
		"over-length": func(e *testenv.ZipEntry) { e.DeclaredSize = testenv.Size(uint64(len(e.Data) / 2)) },
	} {
		entries := slices.Clone(good)
		for i := range entries {
			if !entries[i].Mode.IsDir() && len(entries[i].Data) > 1 {
				mutate(&entries[i])
				break
			}
		}
		corrupt[name] = entries
	}
	reg := testenv.StartRegistry(t)
	for name, entries := range corrupt {
		t.Run(name, func(t *testing.T) {
			dir, zip := releaseDirWith(t, entries...)
			layout := t.TempDir()
			out, err := run(t, "push", "provider", "--unsigned", dir, "oci-layout:"+layout)
			assertCleanFailure(t, out, err, "zip entry")
			if tags := layoutTags(t, layout); len(tags) > 0 {
				t.Errorf("tags %v written", tags)
			}
			// Pushed by another tool, verify flags it and tofu refuses it.
			repoName := "providers/" + name + "/hello"
			pushThirdParty(t, reg, repoName, "1.0.0", "linux", "amd64", zip)
			out, err = run(t, "verify", reg.Host+"/"+repoName+":1.0.0")
			assertCleanFailure(t, out, err, "zip entry")
			tofu := testenv.Tofu(t, ociMirrorConfig(reg.Host))
			work := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "example.com/test/hello", "example.com/"+name+"/hello", 1)})
			out, err = tofu.Try(t, work, "init", "-input=false", "-no-color")
			if err == nil || !strings.Contains(out, "zip: ") {
				t.Errorf("tofu did not refuse the zip as corrupt (err %v): the oracle disagrees with push and verify:\n%s", err, out)
			}
		})
	}
	t.Run("symlink-entry", func(t *testing.T) {
		entries := append(slices.Clone(good),
			testenv.ZipEntry{Name: "docs/", Mode: fs.ModeDir | 0o755},
			testenv.ZipEntry{Name: "docs/binary-link", Data: []byte("../" + good[0].Name), Mode: fs.ModeSymlink | 0o777})
		dir, _ := releaseDirWith(t, entries...)
		repo := reg.Host + "/providers/linked/hello"
		mustRun(t, "push", "provider", "--quiet", "--sign-key", testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"), dir, repo)
		stored := readProvenance(t, reg, "providers/linked/hello", "1.0.0").Platforms["linux_amd64"].H1
		tofu := testenv.Tofu(t, ociMirrorConfig(reg.Host))
		work := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "example.com/test/hello", "example.com/linked/hello", 1)})
		tofu.Run(t, work, "init", "-input=false", "-no-color")
		e := lockEntry(t, work, "example.com/linked/hello", "1.0.0")
		if !slices.Contains(e.Hashes, stored) {
			t.Errorf("tofu's hashes %v lack the stored h1 %s: the packer and tofu's unpacker disagree on link entries", e.Hashes, stored)
		}
	})
}

// 8. The smaller points: a lower-case "bearer" scheme; blob uploads that
// meet a transient failure are retried; a corrupt provenance costs the
// network mirror only its h1 hashes, not the packages.
func TestSmallerPoints(t *testing.T) {
	t.Run("bearer-lower-case", func(t *testing.T) {
		tokens := filepath.Join(t.TempDir(), "tokens")
		os.WriteFile(tokens, []byte("tok-0123456789abcdef\n"), 0o600)
		s := startServe(t, "--provider-template", "oci-layout:"+t.TempDir()+"/${namespace}/${type}", "--auth-token-file", tokens)
		for scheme, want := range map[string]int{"bearer": 404, "BEARER": 404, "Bearer": 404, "Basic": 401} {
			req, _ := http.NewRequest("GET", s.URL+"/v1/mirror/example.com/test/hello/index.json", nil)
			req.Header.Set("Authorization", scheme+" tok-0123456789abcdef")
			resp, err := s.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s: %d, want %d", scheme, resp.StatusCode, want)
			}
		}
	})
	t.Run("blob-upload-retried", func(t *testing.T) {
		reg := testenv.StartRegistry(t)
		uploads := func(r *http.Request) bool {
			return (r.Method == http.MethodPut || r.Method == http.MethodPatch) && strings.Contains(r.URL.Path, "/blobs/uploads/")
		}
		front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{
			Match: uploads, First: 1, Fault: testenv.ErrorAnswer(503, "UNAVAILABLE", "try again"),
		}}})
		out, err := pushProvider(t, reg.Credential(), front.Host+"/providers/test/hello", "1.0.0")
		if err != nil {
			t.Fatalf("push with one failed upload: %v\n%s", err, out)
		}
		if n := front.Count(func(e testenv.AccessEntry) bool { return e.Status == 503 }); n != 1 {
			t.Errorf("%d uploads failed, want the first one", n)
		}
	})
	t.Run("corrupt-provenance", func(t *testing.T) {
		reg := testenv.StartRegistry(t)
		pushHello(t, reg.Host+"/providers/test/hello", "1.0.0")
		corruptProvenance(t, reg, "providers/test/hello", "1.0.0")
		s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}")
		var doc struct {
			Archives map[string]struct{ Hashes []string }
		}
		getJSON(t, s, "/v1/mirror/example.com/test/hello/1.0.0.json", &doc)
		zh := "zh:" + fixtureZipSHA(t, "1.0.0", "linux_amd64")
		if h := doc.Archives["linux_amd64"].Hashes; !slices.Equal(h, []string{zh}) {
			t.Errorf("hashes %v, want the digest alone (%s)", h, zh)
		}
		tofu := testenv.Tofu(t, networkMirrorConfig(s))
		work := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "1.0.0")})
		if out := tofu.Run(t, work, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed example.com/test/hello v1.0.0") {
			t.Errorf("not installed through the mirror:\n%s", out)
		}
		// What needs the provenance says so.
		assertJSONError(t, s, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 502, 502)
	})
}

// corruptProvenance overwrites the provenance config blob of a version in
// a Distribution registry's storage: same size, other bytes.
func corruptProvenance(t *testing.T, reg *testenv.Registry, repoName, version string) {
	t.Helper()
	ctx := context.Background()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.OpenReadOnly(ctx, oci.Reference{Registry: reg.Host, Repository: repoName})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := oci.ResolveProvider(ctx, repo, names.MustParseVersion(version))
	if err != nil || pv.Provenance == nil {
		t.Fatalf("provenance of %s: %v", version, err)
	}
	b, err := oci.FetchManifest(ctx, repo, *pv.Provenance)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Config struct{ Digest string }
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	hexd := strings.TrimPrefix(m.Config.Digest, "sha256:")
	data := filepath.Join(reg.Storage, "docker", "registry", "v2", "blobs", "sha256", hexd[:2], hexd, "data")
	old, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, bytes.Repeat([]byte("x"), len(old)), 0o644); err != nil {
		t.Fatal(err)
	}
}
