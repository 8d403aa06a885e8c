package testenv

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Registry kinds, as Registry.Kind names them (and subtests may).
const (
	KindDistribution   = "distribution-v3"
	KindDistribution28 = "distribution-2.8"
	KindCrane          = "crane"
	KindTokenAuth      = "distribution-v3-token"
)

// RegistryStarter starts one kind of registry for a test.
type RegistryStarter struct {
	Kind  string
	Start func(testing.TB) *Registry
}

// AllRegistries lists a starter for every kind of registry, so a test can
// run against each: Distribution v3 (anonymous and with htpasswd),
// Distribution 2.8, crane's registry and token-auth Distribution v3. The
// ones with authentication use fixed test credentials (Registry.Username,
// Registry.Password).
func AllRegistries() []RegistryStarter {
	return []RegistryStarter{
		{KindDistribution, StartRegistry},
		{KindDistribution + "-htpasswd", func(t testing.TB) *Registry { return StartRegistryWithAuth(t, "registry-user", "registry-Pa55") }},
		{KindDistribution28, StartDistribution28},
		{KindCrane, StartCraneRegistry},
		{KindTokenAuth, func(t testing.TB) *Registry { return StartTokenRegistry(t, "token-user", "token-Pa55") }},
	}
}

// distribution28 is where Debian's docker-registry package installs
// Distribution 2.8.
const distribution28 = "/usr/bin/docker-registry"

// Registry is a running OCI registry serving TLS on loopback, stopped when
// the test ends. Every kind is reached the same way (Host, CA, and the
// credentials when it wants them), so one test can loop over all of them.
type Registry struct {
	// Kind is one of the Kind… constants.
	Kind string
	// Host is "localhost:PORT", as clients name it.
	Host string
	CA   *CA
	// Storage is the registry's storage directory (blobs for crane).
	Storage string
	// Username and Password are the credentials the registry requires; both
	// are empty for an anonymous registry.
	Username, Password string
	// Token is the token service of a token-auth registry, else nil.
	Token *TokenServer

	argv   func(t testing.TB) []string // the command that serves it
	config string                      // Distribution's configuration file
	cmd    *exec.Cmd
	front  *Front   // crane's TLS front
	env    []string // beside the test's environment
	done   chan struct{}
	log    *LockedBuffer
}

// StartRegistry starts a CNCF Distribution v3 registry with filesystem
// storage in a temporary directory; it stops when the test ends.
func StartRegistry(t testing.TB) *Registry {
	t.Helper()
	return startDistribution(t, KindDistribution, "", "")
}

// StartRegistryWithAccessLog starts a CNCF Distribution v3 registry that
// logs every request it answers (see AccessLog): counting them costs no
// front between clients and the registry.
func StartRegistryWithAccessLog(t testing.TB) *Registry {
	t.Helper()
	r := newDistribution(t, KindDistribution, "")
	r.rewriteConfig(t, func(c string) string {
		return strings.Replace(c, "  accesslog:\n    disabled: true\n", "  accesslog:\n    disabled: false\n", 1)
	})
	r.Start(t)
	t.Cleanup(r.Stop)
	return r
}

// accessLine matches a request in Distribution's access log (combined
// log format).
var accessLine = regexp.MustCompile(`\] "([A-Z]+) (\S+) HTTP/[0-9.]+" ([0-9]{3}) `)

// AccessLog lists the requests the registry answered since it started, as
// "METHOD PATH STATUS", when it was started with StartRegistryWithAccessLog.
func (r *Registry) AccessLog() []string {
	var out []string
	for _, line := range strings.Split(r.Log(), "\n") {
		if m := accessLine.FindStringSubmatch(line); m != nil {
			out = append(out, m[1]+" "+m[2]+" "+m[3])
		}
	}
	return out
}

// Notifying is where a registry sends its notifications
// (StartRegistryNotifying).
type Notifying struct {
	// URL receives them; Authorization is the header they carry.
	URL, Authorization string
	// CAFile, when set, is the CA the registry trusts for URL (its
	// SSL_CERT_FILE).
	CAFile string
}

// StartRegistryNotifying starts a CNCF Distribution v3 registry that
// notifies of every push and delete (notifications.endpoints, one try
// after another 100ms apart) where notify, called with the registry
// Host and CA known, before it starts, says.
func StartRegistryNotifying(t testing.TB, notify func(r *Registry) Notifying) *Registry {
	t.Helper()
	r := newDistribution(t, KindDistribution, "")
	n := notify(r)
	r.rewriteConfig(t, func(c string) string { return c + notificationsConfig(n) })
	if n.CAFile != "" {
		r.env = append(r.env, "SSL_CERT_FILE="+n.CAFile)
	}
	r.Start(t)
	t.Cleanup(r.Stop)
	return r
}

// notificationsConfig is Distribution's notifications section for n.
func notificationsConfig(n Notifying) string {
	return fmt.Sprintf(`notifications:
  endpoints:
    - name: oci-tofu
      url: %s
      headers:
        Authorization: [%q]
      timeout: 2s
      threshold: 3
      backoff: 100ms
`, n.URL, n.Authorization)
}

// StartRegistryWithAuth starts a Distribution v3 registry that requires
// HTTP basic authentication (htpasswd) as user with password.
func StartRegistryWithAuth(t testing.TB, user, password string) *Registry {
	t.Helper()
	return startDistribution(t, KindDistribution, user, password)
}

// StartDistribution28 starts Distribution 2.8, the older registry many
// sites still run (Debian's docker-registry package: `make tools-apt`).
func StartDistribution28(t testing.TB) *Registry {
	t.Helper()
	return startDistribution(t, KindDistribution28, "", "")
}

// StartCraneRegistry starts go-containerregistry's registry (`crane
// registry serve`, blobs on disk, manifests in memory). It speaks plain
// HTTP only, so a Front without options gives it TLS on Host; a restart
// (Stop, Start) loses its manifests.
func StartCraneRegistry(t testing.TB) *Registry {
	t.Helper()
	dir := t.TempDir()
	port := FreePort(t)
	r := &Registry{Kind: KindCrane, CA: NewCA(t), Storage: filepath.Join(dir, "blobs")}
	r.front = StartFront(t, fmt.Sprintf("http://127.0.0.1:%d", port), FrontOptions{})
	r.Host = r.front.Host
	if err := os.MkdirAll(r.Storage, 0o700); err != nil {
		t.Fatal(err)
	}
	r.argv = func(t testing.TB) []string {
		return []string{Tool(t, "crane"), "registry", "serve", "--address", fmt.Sprintf("127.0.0.1:%d", port), "--disk", r.Storage}
	}
	r.Start(t)
	t.Cleanup(r.Stop)
	return r
}

// StartTokenRegistry starts Distribution v3 with token authentication:
// its challenges send clients to a TokenServer of ours, which issues
// signed JWTs for user with password, with the scope they ask for.
func StartTokenRegistry(t testing.TB, user, password string) *Registry {
	t.Helper()
	ts := StartTokenServer(t, "oci-tofu-registry", map[string]string{user: password})
	auth := fmt.Sprintf("auth:\n  token:\n    realm: %s\n    service: %s\n    issuer: %s\n    jwks: %s\n",
		ts.URL, ts.Service, ts.Issuer, ts.JWKSFile)
	r := newDistribution(t, KindTokenAuth, auth)
	r.Username, r.Password, r.Token = user, password, ts
	r.Start(t)
	t.Cleanup(r.Stop)
	return r
}

// startDistribution starts Distribution (v3 or 2.8), with htpasswd
// authentication when user is set.
func startDistribution(t testing.TB, kind, user, password string) *Registry {
	t.Helper()
	auth := ""
	if user != "" {
		auth = htpasswdAuth(t, user, password)
	}
	r := newDistribution(t, kind, auth)
	r.Username, r.Password = user, password
	r.Start(t)
	t.Cleanup(r.Stop)
	return r
}

// newDistribution writes the configuration of a Distribution registry of
// the given kind with the given auth section; it does not start it.
func newDistribution(t testing.TB, kind, auth string) *Registry {
	t.Helper()
	ca := NewCA(t)
	dir := t.TempDir()
	port := FreePort(t)
	r := &Registry{Kind: kind, CA: ca, Storage: filepath.Join(dir, "storage"), Host: fmt.Sprintf("localhost:%d", port)}
	config := filepath.Join(dir, "config.yml")
	r.config = config
	if err := os.WriteFile(config, []byte(distributionConfig(r.Storage, port, ca)+auth), 0o600); err != nil {
		t.Fatal(err)
	}
	r.argv = func(t testing.TB) []string {
		if kind == KindDistribution28 {
			if _, err := os.Stat(distribution28); err != nil {
				t.Fatalf("Distribution 2.8 not found at %s: run `make tools-apt` (make test does)", distribution28)
			}
			return []string{distribution28, "serve", config}
		}
		return []string{Tool(t, "registry"), "serve", config}
	}
	return r
}

// distributionConfig is the configuration both Distribution 2.8 and v3
// read: TLS on 127.0.0.1:port, filesystem storage, deletes allowed, blobs
// served by the registry itself (a Front adds redirects where wanted).
func distributionConfig(storage string, port int, ca *CA) string {
	return fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  redirect:
    disable: true
http:
  addr: 127.0.0.1:%d
  tls:
    certificate: %s
    key: %s
`, storage, port, ca.ServerCertFile, ca.ServerKeyFile)
}

// rewriteConfig edits a Distribution registry's configuration before it
// starts.
func (r *Registry) rewriteConfig(t testing.TB, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(r.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.config, []byte(edit(string(b))), 0o600); err != nil {
		t.Fatal(err)
	}
}

// htpasswdAuth writes an htpasswd file for user and returns the auth
// section that uses it.
func htpasswdAuth(t testing.TB, user, password string) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(t.TempDir(), "htpasswd")
	if err := os.WriteFile(htpasswd, []byte(user+":"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("auth:\n  htpasswd:\n    realm: oci-tofu-test\n    path: %s\n", htpasswd)
}

// URL is the registry's base URL, https://Host.
func (r *Registry) URL() string { return "https://" + r.Host }

// Credential is the registry's credential for Host (empty for an
// anonymous registry).
func (r *Registry) Credential() Credential {
	return Credential{Host: r.Host, Username: r.Username, Password: r.Password}
}

// Start (re)starts the registry process on its port and storage and waits
// until it answers /v2/.
func (r *Registry) Start(t testing.TB) {
	t.Helper()
	argv := r.argv(t)
	r.cmd = exec.Command(argv[0], argv[1:]...)
	r.cmd.Env = append(append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none"), r.env...)
	r.log, r.done = startLogged(t, r.cmd)
	client := r.CA.HTTPClient()
	client.Timeout = time.Second
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(r.URL() + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return
			}
		}
		select {
		case <-r.done:
			t.Fatalf("%s registry exited: %s", r.Kind, r.log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	r.Stop()
	t.Fatalf("%s registry did not start: %s", r.Kind, r.log.String())
}

// Stop stops the registry process (its storage stays).
func (r *Registry) Stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// Log is what the registry process printed.
func (r *Registry) Log() string {
	if r.log == nil {
		return ""
	}
	return r.log.String()
}

// Credential is a user name and password for one registry host.
type Credential struct {
	Host, Username, Password string
}

// WriteDockerConfig writes dir/config.json with an "auths" entry for each
// credential that has a user name, as `docker login` would, and returns
// dir: point DOCKER_CONFIG at it, or use HOME/.docker for tofu.
func WriteDockerConfig(t testing.TB, dir string, creds ...Credential) string {
	t.Helper()
	auths := map[string]map[string]string{}
	for _, c := range creds {
		if c.Username == "" {
			continue
		}
		auths[c.Host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + c.Password))}
	}
	b, err := json.Marshal(map[string]any{"auths": auths})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// AliasRepository makes repository alias show what repository from holds,
// by linking alias's storage to from's (Distribution only): many
// repositories of the same content appear at once, without pushing each.
// The registry serves each as a repository of its own (tags, manifests,
// blobs), so clients and caches see distinct repositories.
func (r *Registry) AliasRepository(t testing.TB, from, alias string) {
	t.Helper()
	if r.Kind != KindDistribution && r.Kind != KindDistribution28 && r.Kind != KindTokenAuth {
		t.Fatalf("AliasRepository needs a Distribution registry, not %s", r.Kind)
	}
	repos := filepath.Join(r.Storage, "docker", "registry", "v2", "repositories")
	src := filepath.Join(repos, filepath.FromSlash(from))
	if _, err := os.Stat(src); err != nil {
		t.Fatalf("repository %s: %v", from, err)
	}
	dst := filepath.Join(repos, filepath.FromSlash(alias))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(src, dst); err != nil {
		t.Fatal(err)
	}
}

// Pid is the registry process's id (0 when it is not running), for
// benchmarks that read its CPU time.
func (r *Registry) Pid() int {
	if r.cmd == nil || r.cmd.Process == nil {
		return 0
	}
	return r.cmd.Process.Pid
}
