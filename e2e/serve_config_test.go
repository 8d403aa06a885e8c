package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// `serve --config` takes the oci_mirror blocks of a tofu CLI configuration:
// the first block whose include/exclude admits a provider names its
// repository; providers no block admits are 404. The same file, given to
// tofu, installs the same providers from the registry directly.
func TestServeConfigFileMappings(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/team-a/hello", "1.0.0")
	pushHello(t, reg.Host+"/everyone/b.example.com/test/hello", "1.1.0")
	cfg := filepath.Join(t.TempDir(), "tofu.rc")
	// The first block names neither ${hostname} nor ${namespace}: its
	// include selects one host and one namespace, which tofu allows.
	os.WriteFile(cfg, []byte(`
provider_installation {
  oci_mirror {
    repository_template = "`+reg.Host+`/team-a/${type}"
    include             = ["a.example.com/test/*"]
  }
  oci_mirror {
    repository_template = "`+reg.Host+`/everyone/${hostname}/${namespace}/${type}"
    exclude             = ["blocked.example.com/*/*"]
  }
}
`), 0o644)
	s := startServe(t, "--config", cfg)
	versions := func(host string) (int, map[string]any) {
		code, body := s.get(t, "/v1/mirror/"+host+"/test/hello/index.json")
		var doc struct{ Versions map[string]any }
		json.Unmarshal(body, &doc)
		return code, doc.Versions
	}
	if code, v := versions("a.example.com"); code != 200 || len(v) != 1 || v["1.0.0"] == nil {
		t.Errorf("first mapping: %d %v", code, v)
	}
	if code, v := versions("b.example.com"); code != 200 || len(v) != 1 || v["1.1.0"] == nil {
		t.Errorf("second mapping: %d %v", code, v)
	}
	if code, _ := versions("blocked.example.com"); code != 404 {
		t.Errorf("excluded provider: %d", code)
	}
	for _, host := range []string{"a.example.com", "b.example.com"} {
		want := map[string]string{"a.example.com": "1.0.0", "b.example.com": "1.1.0"}[host]
		dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, ">= 1.0"), "example.com", host, 1)})
		// Through the proxy…
		testenv.Tofu(t, networkMirrorConfig(s)).Run(t, dir, "init", "-input=false", "-no-color")
		lockEntry(t, dir, host+"/test/hello", want)
		// …and with the very same file, straight from the registry.
		os.RemoveAll(filepath.Join(dir, ".terraform"))
		os.Remove(filepath.Join(dir, ".terraform.lock.hcl"))
		same, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		testenv.Tofu(t, string(same)).Run(t, dir, "init", "-input=false", "-no-color")
		lockEntry(t, dir, host+"/test/hello", want)
	}
}

// configCases are CLI configuration files tofu accepts and refuses; each
// is read by tofu and by `oci-tofu serve --config`, which must agree.
func configCases(reg string) map[string]string {
	block := func(body string) string {
		return "provider_installation {\n  oci_mirror {\n" + body + "\n  }\n}\n"
	}
	all := `repository_template = "` + reg + `/p/${hostname}/${namespace}/${type}"`
	return map[string]string{
		"all symbols":          block(all),
		"one namespace":        block(`repository_template = "` + reg + `/acme/${type}"` + "\ninclude = [\"example.com/acme/*\"]"),
		"one provider":         block(`repository_template = "` + reg + `/widgets"` + "\ninclude = [\"example.com/acme/widgets\"]"),
		"one host":             block(`repository_template = "` + reg + `/${namespace}/${type}"` + "\ninclude = [\"example.com/*/*\"]"),
		"short include":        block(`repository_template = "` + reg + `/${namespace}/${type}"` + "\ninclude = [\"hashicorp/*\"]"),
		"spaces":               block(`repository_template = "` + reg + `/${ hostname }/${namespace}/${ type }"`),
		"directive":            block(`repository_template = "` + reg + `/%{ if namespace == \"hashicorp\" }official%{ else }${namespace}%{ endif }/${hostname}/${type}"`),
		"no hostname":          block(`repository_template = "` + reg + `/${namespace}/${type}"`),
		"no hostname, exclude": block(`repository_template = "` + reg + `/${namespace}/${type}"` + "\nexclude = [\"blocked.example.com/*/*\"]"),
		"two hosts":            block(`repository_template = "` + reg + `/${namespace}/${type}"` + "\ninclude = [\"a.example.com/*/*\", \"b.example.com/*/*\"]"),
		"no namespace":         block(`repository_template = "` + reg + `/${hostname}/${type}"`),
		"no type":              block(`repository_template = "` + reg + `/${hostname}/${namespace}"` + "\ninclude = [\"example.com/acme/*\"]"),
		"wildcard host":        block(all + "\ninclude = [\"*/acme/*\"]"),
		"wildcard namespace":   block(all + "\ninclude = [\"example.com/*/aws\"]"),
		"partial glob":         block(all + "\nexclude = [\"example.com/hashi*/aws\"]"),
		"one segment":          block(all + "\ninclude = [\"aws\"]"),
		"four segments":        block(all + "\ninclude = [\"a/b/c/d\"]"),
		"unknown symbol":       block(`repository_template = "` + reg + `/${hostname}/${namespace}/${kind}"`),
		"scheme":               block(`repository_template = "https://` + reg + `/${hostname}/${namespace}/${type}"`),
		"tag":                  block(`repository_template = "` + reg + `/${hostname}/${namespace}/${type}:latest"`),
		"layout":               block(`repository_template = "oci-layout:/srv/${hostname}/${namespace}/${type}"`),
		"no template":          block(`include = ["example.com/*/*"]`),
		"bad directive":        block(`repository_template = "` + reg + `/%{ if }/${namespace}/${type}"`),
		"two blocks":           block(all) + block(all),
		"unknown method":       "provider_installation {\n  oci_mirro {\n    " + all + "\n  }\n}\n",
		"mirror without url":   "provider_installation {\n  network_mirror {}\n  oci_mirror {\n    " + all + "\n  }\n}\n",
		"with direct":          "provider_installation {\n  oci_mirror {\n    " + all + "\n    include = [\"example.com/*/*\"]\n  }\n  direct {\n    exclude = [\"example.com/*/*\"]\n  }\n}\n",
		"bad direct exclude":   "provider_installation {\n  oci_mirror {\n    " + all + "\n  }\n  direct {\n    exclude = [\"*/x/*\"]\n  }\n}\n",
		"labels":               "provider_installation \"x\" {\n  oci_mirror {\n    " + all + "\n  }\n}\n",
	}
}

// Differential: every file of the corpus goes through the real tofu and
// through `oci-tofu serve --config`; both accept it or both refuse it.
func TestServeConfigDifferential(t *testing.T) {
	reg := "localhost:5000"
	for name, body := range configCases(reg) {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "tofu.rc")
			if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			tofuOK, tofuOut := tofuAcceptsCLIConfig(t, body)
			ourOK, ourOut := serveAcceptsConfig(t, cfg)
			if tofuOK != ourOK {
				t.Errorf("tofu accepts: %v, oci-tofu serve --config accepts: %v\n--- file:\n%s\n--- tofu:\n%s\n--- oci-tofu:\n%s", tofuOK, ourOK, body, tofuOut, ourOut)
			}
		})
	}
}

// tofuAcceptsCLIConfig runs `tofu init` in an empty directory with the
// file as TF_CLI_CONFIG_FILE: tofu reports problems in its CLI and
// provider installation configuration and then goes on, saying so.
func tofuAcceptsCLIConfig(t *testing.T, body string) (bool, string) {
	t.Helper()
	out, err := testenv.Tofu(t, body).Try(t, t.TempDir(), "init", "-input=false", "-no-color", "-backend=false")
	if err != nil {
		t.Fatalf("tofu init in an empty directory failed: %v\n%s", err, out)
	}
	return !strings.Contains(out, "As a result of the above problems"), out
}

// serveAcceptsConfig starts `oci-tofu serve --config FILE`: it either
// starts serving or exits with the reason.
func serveAcceptsConfig(t *testing.T, cfg string) (bool, string) {
	t.Helper()
	cmd := exec.Command(ociTofu, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--insecure-no-tls")
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(io.TeeReader(stderr, io.Discard))
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return false, out.String()
			}
			out.WriteString(l + "\n")
			if strings.Contains(l, "msg=serving") {
				return true, out.String()
			}
		case <-deadline:
			t.Fatalf("oci-tofu serve neither served nor exited:\n%s", out.String())
		}
	}
}
