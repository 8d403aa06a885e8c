package testenv

import (
	"encoding/json"
	"net/http"
	"net/http/cgi"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// GitHTTPBackend is Debian's git smart-HTTP server program (package git).
const GitHTTPBackend = "/usr/lib/git-core/git-http-backend"

// GitServer is a git server speaking smart HTTP over TLS: the real `git
// http-backend` run as CGI behind a small TLS front of ours, which keeps
// an access log (Requests, Count) and can be stopped and started.
type GitServer struct {
	Host string // localhost:PORT
	Root string // bare repositories, NAME.git
	site
}

// StartGitServer serves the bare repositories under a new root until the
// test ends; it skips nothing: without git the test fails.
func StartGitServer(t testing.TB, opts OriginOptions) *GitServer {
	t.Helper()
	if _, err := os.Stat(GitHTTPBackend); err != nil {
		t.Fatalf("git http-backend is needed (Debian package git, make tools-apt): %v", err)
	}
	g := &GitServer{Root: t.TempDir()}
	l := listenLoopback(t)
	g.Host = loopbackHost(l)
	h := &cgi.Handler{Path: GitHTTPBackend, Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + g.Root, "GIT_HTTP_EXPORT_ALL=1", "HOME=" + g.Root}}
	g.serveHandler(t, l, opts, h)
	return g
}

// AddRepo makes a repository NAME from commits: each is a tree (a
// directory copied as it is) committed and tagged with its tags (annotated
// when the tag starts with "a:", which is dropped). It returns the
// repository's https URL and the commit of each step.
func (g *GitServer) AddRepo(t testing.TB, name string, commits ...GitCommit) (string, []string) {
	t.Helper()
	work := t.TempDir()
	env := []string{"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_COMMITTER_NAME=test",
		"GIT_COMMITTER_EMAIL=test@example.com", "HOME=" + work, "GIT_CONFIG_NOSYSTEM=1"}
	MustRun(t, work, env, "git", "init", "-q", "-b", "main", ".")
	var ids []string
	for i, c := range commits {
		entries, _ := os.ReadDir(work)
		for _, e := range entries {
			if e.Name() != ".git" {
				os.RemoveAll(filepath.Join(work, e.Name()))
			}
		}
		MustRun(t, "", nil, "cp", "-a", c.Tree+"/.", work)
		// cp -a keeps the trees' times: a file of the same size and time as
		// the one before would look unchanged to git's index, so every file
		// is hashed again.
		MustRun(t, work, env, "git", "rm", "-r", "-q", "--cached", "--ignore-unmatch", ".")
		MustRun(t, work, env, "git", "add", "-A")
		MustRun(t, work, env, "git", "commit", "-q", "--allow-empty", "-m", "step "+string(rune('a'+i)))
		for _, tag := range c.Tags {
			if a, ok := strings.CutPrefix(tag, "a:"); ok {
				MustRun(t, work, env, "git", "tag", "-a", "-m", a, a)
			} else {
				MustRun(t, work, env, "git", "tag", tag)
			}
		}
		ids = append(ids, strings.TrimSpace(MustRun(t, work, env, "git", "rev-parse", "HEAD")))
	}
	MustRun(t, "", env, "git", "clone", "-q", "--bare", work, filepath.Join(g.Root, name+".git"))
	return "https://" + g.Host + "/" + name + ".git", ids
}

// GitCommit is one commit of AddRepo.
type GitCommit struct {
	Tree string
	Tags []string
}

// UploadPacks counts the fetches the server served (git-upload-pack
// POSTs, one per clone or fetch, whatever the ref discovery before it).
func (g *GitServer) UploadPacks() int {
	return g.Count(func(p string) bool { return strings.HasSuffix(p, "/git-upload-pack") })
}

// ModuleRegistry is a static origin module registry over TLS: service
// discovery with modules.v1, versions and download answers set by the
// test (X-Terraform-Get on 204, or JSON location on 200), as a public
// registry answers them.
type ModuleRegistry struct {
	Host string // localhost:PORT
	site
	mu      sync.Mutex
	modules map[string]map[string]ModuleAnswer // NS/NAME/SYSTEM → version → answer
}

// ModuleAnswer is a download answer: Location given in X-Terraform-Get,
// or, with JSON, in a 200 answer's location field.
type ModuleAnswer struct {
	Location string
	JSON     bool
}

// StartModuleRegistry serves the registry until the test ends.
func StartModuleRegistry(t testing.TB, opts OriginOptions) *ModuleRegistry {
	t.Helper()
	m := &ModuleRegistry{modules: map[string]map[string]ModuleAnswer{}}
	l := listenLoopback(t)
	m.Host = loopbackHost(l)
	m.serveHandler(t, l, opts, http.HandlerFunc(m.serve))
	return m
}

// Set publishes version of module (NS/NAME/SYSTEM) with its answer.
func (m *ModuleRegistry) Set(module, version string, a ModuleAnswer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.modules[module] == nil {
		m.modules[module] = map[string]ModuleAnswer{}
	}
	m.modules[module][version] = a
}

func (m *ModuleRegistry) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == "/.well-known/terraform.json" {
		writeJSONAnswer(w, map[string]string{"modules.v1": "/v1/modules/"})
		return
	}
	rest, ok := strings.CutPrefix(p, "/v1/modules/")
	parts := strings.Split(rest, "/")
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case ok && len(parts) == 4 && parts[3] == "versions" && m.modules[path.Join(parts[:3]...)] != nil:
		var vs []map[string]string
		for v := range m.modules[path.Join(parts[:3]...)] {
			vs = append(vs, map[string]string{"version": v})
		}
		writeJSONAnswer(w, map[string]any{"modules": []any{map[string]any{"versions": vs}}})
	case ok && len(parts) == 5 && parts[4] == "download":
		a, found := m.modules[path.Join(parts[:3]...)][parts[3]]
		if !found {
			http.NotFound(w, r)
		} else if a.JSON {
			writeJSONAnswer(w, map[string]string{"location": a.Location})
		} else {
			w.Header().Set("X-Terraform-Get", a.Location)
			w.WriteHeader(http.StatusNoContent)
		}
	default:
		http.NotFound(w, r)
	}
}

func writeJSONAnswer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// FileSite is a static HTTPS site serving a directory (archives of
// module sources), with an access log; Redirect adds answers that send
// a path elsewhere.
type FileSite struct {
	Host string // localhost:PORT
	Root string
	site
	mu        sync.Mutex
	redirects map[string]string
}

// StartFileSite serves a new directory until the test ends.
func StartFileSite(t testing.TB, opts OriginOptions) *FileSite {
	t.Helper()
	f := &FileSite{Root: t.TempDir(), redirects: map[string]string{}}
	l := listenLoopback(t)
	f.Host = loopbackHost(l)
	files := http.FileServer(http.Dir(f.Root))
	f.serveHandler(t, l, opts, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		to, ok := f.redirects[r.URL.Path]
		f.mu.Unlock()
		if ok {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		files.ServeHTTP(w, r)
	}))
	return f
}

// Put writes a file below the site's root and returns its https URL.
func (f *FileSite) Put(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(f.Root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return "https://" + f.Host + "/" + name
}

// Redirect answers GET /name with a 302 to url, and returns /name's URL.
func (f *FileSite) Redirect(name, url string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.redirects["/"+name] = url
	return "https://" + f.Host + "/" + name
}
