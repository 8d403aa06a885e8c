package modulesource_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/modulesource"
)

func TestParseSource(t *testing.T) {
	for _, c := range []struct {
		loc, kind, url, ref, archive, sub string
	}{
		{"git::https://h.example/r.git?ref=v1.2.0", "git", "https://h.example/r.git", "v1.2.0", "", ""},
		{"git::https://h.example/r.git//modules/x?ref=v1", "git", "https://h.example/r.git", "v1", "", "modules/x"},
		{"github.com/acme/vpc?ref=v5.8.1", "git", "https://github.com/acme/vpc.git", "v5.8.1", "", ""},
		{"github.com/acme/vpc//sub?ref=v5", "git", "https://github.com/acme/vpc.git", "v5", "", "sub"},
		{"https://h.example/m.tar.gz", "archive", "https://h.example/m.tar.gz", "", "tar.gz", ""},
		{"https://h.example/m.tgz//a/b", "archive", "https://h.example/m.tgz", "", "tar.gz", "a/b"},
		{"https://h.example/get?id=3&archive=zip", "archive", "https://h.example/get?id=3", "", "zip", ""},
		{"https://h.example/m.zip?sig=abc", "archive", "https://h.example/m.zip?sig=abc", "", "zip", ""},
	} {
		s, err := modulesource.ParseSource(c.loc)
		if err != nil {
			t.Errorf("%s: %v", c.loc, err)
			continue
		}
		if s.Kind != c.kind || s.URL.String() != c.url || s.Ref != c.ref || s.Archive != c.archive || s.Subdir != c.sub {
			t.Errorf("%s: %+v (url %s)", c.loc, s, s.URL)
		}
	}
	for _, loc := range []string{
		"http://h.example/m.zip",           // not https
		"git::ssh://git@h.example/r.git",   // not https
		"git::https://u:p@h.example/r.git", // credentials in the URL
		"s3::https://s3.amazonaws.com/b/m.zip",
		"hg::https://h.example/r",
		"https://h.example/page",                  // not an archive
		"git::https://h.example/r.git//../x",      // subdir leaving the tree
		"git::https://h.example/r.git?sshkey=abc", // ssh key parameter
		"git::https://h.example/r.git?ref=--upload-pack=x",
		"./relative/m.zip",
		"git::file:///etc",
	} {
		if _, err := modulesource.ParseSource(loc); !errors.Is(err, modulesource.ErrRefused) {
			t.Errorf("%s: %v, want refused", loc, err)
		}
	}
}

// env is an origin module registry, a git server and an archive site,
// with a trap site the fetcher is never allowed to reach.
type env struct {
	reg   *testenv.ModuleRegistry
	git   *testenv.GitServer
	files *testenv.FileSite
	trap  *testenv.FileSite
	f     *modulesource.Fetcher
}

func newEnv(t *testing.T) *env {
	e := &env{
		reg:   testenv.StartModuleRegistry(t, testenv.OriginOptions{}),
		git:   testenv.StartGitServer(t, testenv.OriginOptions{}),
		files: testenv.StartFileSite(t, testenv.OriginOptions{}),
		trap:  testenv.StartFileSite(t, testenv.OriginOptions{}),
	}
	f, err := modulesource.New(modulesource.Config{Registry: e.reg.Host, Sources: []string{e.git.Host, e.files.Host},
		Transport: testenv.NewCA(t).HTTPClient().Transport, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	e.f = f
	t.Cleanup(func() {
		if n := len(e.trap.Requests()); n != 0 {
			t.Errorf("the trap site was reached %d times: %v", n, e.trap.Requests())
		}
	})
	return e
}

var mod = names.Module{Namespace: "acme", Name: "greeting", System: "aws"}

func (e *env) fetch(t *testing.T, version string) (*modulesource.Fetched, error) {
	t.Helper()
	ctx := context.Background()
	s, err := e.f.Resolve(ctx, mod, version)
	if err != nil {
		return nil, err
	}
	f, err := e.f.Fetch(ctx, s)
	if err == nil {
		t.Cleanup(func() { f.Remove() })
	}
	return f, err
}

func tree(t *testing.T, name string, files map[string]string) string {
	dir := filepath.Join(t.TempDir(), name)
	for n, body := range files {
		p := filepath.Join(dir, n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func readFile(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Git sources: a lightweight and an annotated tag, a branch, a commit id
// and a subdirectory; each ref resolves to the commit recorded, and a
// tag's clone is one upload-pack (shallow, one fetch).
func TestFetchGit(t *testing.T) {
	e := newEnv(t)
	v1 := tree(t, "v1", map[string]string{"main.tf": "# one\n", "modules/sub/main.tf": "# sub one\n"})
	v2 := tree(t, "v2", map[string]string{"main.tf": "# two\n", "modules/sub/main.tf": "# sub two\n"})
	v3 := tree(t, "v3", map[string]string{"main.tf": "# three\n"})
	url, ids := e.git.AddRepo(t, "greeting", testenv.GitCommit{Tree: v1, Tags: []string{"v1.0.0"}},
		testenv.GitCommit{Tree: v2, Tags: []string{"a:v2.0.0"}}, testenv.GitCommit{Tree: v3})
	cases := []struct {
		version, loc, want, commit string
	}{
		{"1.0.0", "git::" + url + "?ref=v1.0.0", "# one\n", ids[0]},
		{"2.0.0", "git::" + url + "?ref=v2.0.0", "# two\n", ids[1]},
		{"2.1.0", "git::" + url + "//modules/sub?ref=v2.0.0", "# sub two\n", ids[1]},
		{"3.0.0", "git::" + url + "?ref=main", "# three\n", ids[2]},
		{"3.0.1", "git::" + url, "# three\n", ids[2]},
		{"0.9.0", "git::" + url + "?ref=" + ids[0], "# one\n", ids[0]},
	}
	for _, c := range cases {
		e.reg.Set(mod.String(), c.version, testenv.ModuleAnswer{Location: c.loc, JSON: c.version == "2.0.0"})
	}
	for _, c := range cases {
		before := e.git.UploadPacks()
		f, err := e.fetch(t, c.version)
		if err != nil {
			t.Errorf("%s (%s): %v", c.version, c.loc, err)
			continue
		}
		if got := readFile(t, filepath.Join(f.Dir, "main.tf")); got != c.want || f.Commit != c.commit {
			t.Errorf("%s: main.tf %q commit %s, want %q %s", c.version, got, f.Commit, c.want, c.commit)
		}
		if _, err := os.Stat(filepath.Join(f.Dir, ".git")); err == nil {
			t.Errorf("%s: the work tree holds .git", c.version)
		}
		if n := e.git.UploadPacks() - before; n != 1 {
			t.Errorf("%s: %d upload-packs, want 1", c.version, n)
		}
	}
	e.reg.Set(mod.String(), "9.9.9", testenv.ModuleAnswer{Location: "git::" + url + "?ref=v9"})
	if _, err := e.fetch(t, "9.9.9"); err == nil || !strings.Contains(err.Error(), "no tag or branch") {
		t.Errorf("missing ref: %v", err)
	}
}

// Archives: tar.gz and zip, a subdirectory, a relative location.
func TestFetchArchives(t *testing.T) {
	e := newEnv(t)
	dir := tree(t, "m", map[string]string{"main.tf": "# archived\n", "sub/main.tf": "# archived sub\n"})
	tgz := e.files.Put(t, "m-1.0.0.tar.gz", testenv.TarGzDir(t, dir, ""))
	zipped := e.files.Put(t, "dl/m-2", testenv.CraftZip(t, testenv.ZipEntry{Name: "main.tf", Data: []byte("# zipped\n")}))
	e.reg.Set(mod.String(), "1.0.0", testenv.ModuleAnswer{Location: tgz})
	e.reg.Set(mod.String(), "1.1.0", testenv.ModuleAnswer{Location: tgz + "//sub"})
	e.reg.Set(mod.String(), "2.0.0", testenv.ModuleAnswer{Location: zipped + "?archive=zip"})
	for v, want := range map[string]string{"1.0.0": "# archived\n", "1.1.0": "# archived sub\n", "2.0.0": "# zipped\n"} {
		f, err := e.fetch(t, v)
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		if got := readFile(t, filepath.Join(f.Dir, "main.tf")); got != want || f.Commit != "" {
			t.Errorf("%s: %q commit %q", v, got, f.Commit)
		}
	}
}

// A download answer pointing outside the allow-list, at 127.0.0.1 on
// another port, or at an allowed host that redirects there, is refused
// before any connection to it (the trap site's log stays empty: newEnv).
func TestFetchRefusesHostsOutsideTheAllowList(t *testing.T) {
	e := newEnv(t)
	trapped := e.trap.Put(t, "m.tar.gz", testenv.TarGzDir(t, tree(t, "m", map[string]string{"main.tf": "#\n"}), ""))
	port := strings.TrimPrefix(e.trap.Host, "localhost:")
	for v, loc := range map[string]string{
		"1.0.0": trapped,
		"1.0.1": "https://127.0.0.1:" + port + "/m.tar.gz",
		"1.0.2": "git::https://127.0.0.1:" + port + "/r.git?ref=v1",
		"1.0.3": e.files.Redirect("away.tar.gz", "https://127.0.0.1:"+port+"/m.tar.gz"),
		"1.0.4": "git::" + e.files.Redirect("r.git/info/refs", "https://127.0.0.1:"+port+"/r.git/info/refs"),
	} {
		e.reg.Set(mod.String(), v, testenv.ModuleAnswer{Location: strings.TrimSuffix(loc, "/info/refs")})
		_, err := e.fetch(t, v)
		if !errors.Is(err, modulesource.ErrRefused) || !strings.Contains(err.Error(), "allow-list") {
			t.Errorf("%s (%s): %v, want refused by the allow-list", v, loc, err)
		}
	}
}

// Hostile archives: zip-slip, a link written through, absolute links,
// hard links, a 2 GB file, 200,000 files: refused.
func TestFetchRefusesHostileArchives(t *testing.T) {
	e := newEnv(t)
	many := make([]testenv.TarEntry, 200_000)
	for i := range many {
		many[i] = testenv.TarEntry{Name: fmt.Sprintf("f/%06d.tf", i)}
	}
	for v, c := range map[string]struct {
		entries []testenv.TarEntry
		want    string
	}{
		"1.0.0": {[]testenv.TarEntry{{Name: "main.tf"}, {Name: "../../evil.tf", Data: []byte("x")}}, "leaves the tree"},
		"1.0.1": {[]testenv.TarEntry{{Name: "out", Link: "../.."}, {Name: "out/evil.tf", Data: []byte("x")}}, "below the symbolic link"},
		"1.0.2": {[]testenv.TarEntry{{Name: "passwd", Link: "/etc/passwd"}}, "absolute path"},
		"1.0.3": {[]testenv.TarEntry{{Name: "main.tf"}, {Name: "h", HardLink: "main.tf"}}, "only files, directories"},
		"1.0.4": {[]testenv.TarEntry{{Name: "main.tf"}, {Name: "big.bin", DeclaredSize: 2 << 30}}, "exceed"},
		"1.0.5": {many, "more than 100000 entries"},
	} {
		loc := e.files.Put(t, "hostile-"+v+".tar.gz", testenv.CraftTarGz(t, c.entries...))
		e.reg.Set(mod.String(), v, testenv.ModuleAnswer{Location: loc})
		_, err := e.fetch(t, v)
		if !errors.Is(err, modulesource.ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want refused: %s", v, err, c.want)
		}
	}
	escaped := filepath.Join(filepath.Dir(filepath.Dir(os.TempDir())), "evil.tf")
	if _, err := os.Stat(escaped); err == nil {
		t.Errorf("%s was written", escaped)
	}
}

// The registry's credentials go to the registry's own host only: the git
// server and the archive site never see an Authorization header.
func TestFetchSendsCredentialsToTheRegistryOnly(t *testing.T) {
	e := newEnv(t)
	f, err := modulesource.New(modulesource.Config{Registry: e.reg.Host, Sources: []string{e.git.Host, e.files.Host},
		Transport: testenv.NewCA(t).HTTPClient().Transport, TempDir: t.TempDir(),
		Token: func(host string) string { return map[string]string{e.reg.Host: "registry-secret"}[host] }})
	if err != nil {
		t.Fatal(err)
	}
	e.f = f
	v1 := tree(t, "v1", map[string]string{"main.tf": "# one\n"})
	url, _ := e.git.AddRepo(t, "greeting", testenv.GitCommit{Tree: v1, Tags: []string{"v1.0.0"}})
	e.reg.Set(mod.String(), "1.0.0", testenv.ModuleAnswer{Location: "git::" + url + "?ref=v1.0.0"})
	e.reg.Set(mod.String(), "1.1.0", testenv.ModuleAnswer{Location: e.files.Put(t, "m.tar.gz", testenv.TarGzDir(t, v1, ""))})
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, err := e.fetch(t, v); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
	}
	for _, r := range e.reg.Requests() {
		if r.Authorization != "Bearer" {
			t.Errorf("the registry got %s %s without its token", r.Method, r.Path)
		}
	}
	for name, site := range map[string][]testenv.OriginRequest{"git server": e.git.Requests(), "archive site": e.files.Requests()} {
		if len(site) == 0 {
			t.Errorf("the %s was not asked", name)
		}
		for _, r := range site {
			if r.Authorization != "" {
				t.Errorf("the %s got credentials (%s) on %s %s", name, r.Authorization, r.Method, r.Path)
			}
		}
	}
}
