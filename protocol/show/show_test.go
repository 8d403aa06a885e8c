package show_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/show"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// showPolicy deprecates 1.0.0 and denies 2.0.0-rc1 of example.com/test/hello.
const showPolicy = `
provider "example.com/test/hello" {
  deny = ["2.0.0-rc1"]
  deprecated {
    versions = "1.0.0"
    message  = "use 1.1.0"
  }
}
`

// helloLayout holds example.com/test/hello 1.0.0, 1.1.0 and 2.0.0-rc1
// (and a tag that is no version) in OCI layouts under a temporary
// directory; it returns the provider template and the policy file.
func helloLayout(t *testing.T) (tpl, policyFile string, client *oci.Client) {
	t.Helper()
	dir := t.TempDir()
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Layout: true, Repository: dir + "/test/hello"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1"} {
		seed.Push(t, repo, seed.HelloArtifact(t, v), v)
	}
	seed.Push(t, repo, seed.HelloArtifact(t, "1.1.0"), "latest")
	policyFile = filepath.Join(dir, "policy.hcl")
	if err := os.WriteFile(policyFile, []byte(showPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	return "oci-layout:" + dir + "/${namespace}/${type}", policyFile, client
}

// catalogue serves the catalogue over tpl with policyFile in force, as
// serve does, its registry hostname example.com.
func catalogue(t *testing.T, client *oci.Client, tpl, policyFile string) *httptest.Server {
	t.Helper()
	pt, err := repotemplate.ParseProviderTemplate(tpl)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(policyFile)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(proxy.Options{Client: client, ProviderMappings: []store.ProviderMapping{{Template: pt}}, Policy: policy.NewLive(p), RegistryHostname: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	return httpServer(t, srv)
}

// httpServer serves srv on loopback until the test ends.
func httpServer(t *testing.T, srv *proxy.Server) *httptest.Server {
	web := httptest.NewServer(srv)
	t.Cleanup(web.Close)
	return web
}

// getJSON is the JSON document at path of web, decoded.
func getJSON(t *testing.T, web *httptest.Server, path string) map[string]any {
	t.Helper()
	resp, err := http.Get(web.URL + path + "?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return decode(t, b)
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return m
}

// shown is what show prints of arg, as JSON (asJSON) or text.
func shown(t *testing.T, arg string, opts show.Options, asJSON bool) (string, error) {
	t.Helper()
	s, err := show.Show(context.Background(), arg, opts)
	if err != nil {
		return "", err
	}
	var out, errs bytes.Buffer
	if err := s.Report(&report.Reporter{Out: &out, Err: &errs, JSON: asJSON}); err != nil {
		t.Fatal(err)
	}
	return out.String(), nil
}

// The differential test: show --json of a provider version is the
// catalogue's JSON page of it, field for field, but for the downloads
// (the audit trail of a server; a command keeps none); the newest
// version's too, with the versions the policy deprecates and denies.
func TestShowProviderIsTheCataloguePage(t *testing.T) {
	tpl, pol, client := helloLayout(t)
	web := catalogue(t, client, tpl, pol)
	opts := show.Options{Client: client, ProviderTemplate: tpl, Policy: pol}
	for arg, path := range map[string]string{
		"example.com/test/hello@1.0.0": "/catalog/providers/example.com/test/hello/1.0.0",
		"example.com/test/hello":       "/catalog/providers/example.com/test/hello",
	} {
		out, err := shown(t, arg, opts, true)
		if err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		cli, page := decode(t, []byte(out)), getJSON(t, web, path)
		if cli["downloads"] != nil {
			t.Errorf("%s: downloads %v, want none", arg, cli["downloads"])
		}
		delete(cli, "downloads")
		delete(page, "downloads")
		if !reflect.DeepEqual(cli, page) {
			a, _ := json.MarshalIndent(cli, "", " ")
			b, _ := json.MarshalIndent(page, "", " ")
			t.Errorf("%s: show --json differs from the catalogue's page:\n%s\n---\n%s", arg, a, b)
		}
		if pk, _ := cli["packages"].([]any); len(pk) == 0 {
			t.Errorf("%s: no packages in %s", arg, out)
		}
	}
}

// The text names the version (the newest served, not the tag latest
// nor the denied pre-release), the versions with the policy's verdicts,
// the platforms' packages with zip digest and hashes and the publisher
// key.
func TestShowProviderText(t *testing.T) {
	tpl, pol, client := helloLayout(t)
	out, err := shown(t, "example.com/test/hello", show.Options{Client: client, ProviderTemplate: tpl, Policy: pol}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Provider example.com/test/hello 1.1.0 (the newest served)",
		"Status:          served",
		"  2.0.0-rc1  denied (",
		"  1.0.0      deprecated: use 1.1.0",
		"Protocols:       6.0",
		"Platforms (",
		"  linux_amd64  terraform-provider-hello_1.1.0_linux_amd64.zip  sha256:",
		"    zh:",
		"    SBOM: none",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "latest") {
		t.Errorf("the tag latest is listed:\n%s", out)
	}
}

// A version the policy denies is refused as the catalogue refuses it,
// naming the rule; an address the template maps to no repository names
// the address and the repository; a bad address says what an address
// is; a module address without a module template, or --policy without
// an address, says which flag is missing.
func TestShowRefusals(t *testing.T) {
	tpl, pol, client := helloLayout(t)
	opts := show.Options{Client: client, ProviderTemplate: tpl, Policy: pol}
	for arg, want := range map[string][]string{
		"example.com/test/hello@2.0.0-rc1": {"provider example.com/test/hello@2.0.0-rc1", `denied by the policy's rule "example.com/test/hello"`},
		"example.com/test/nope":            {"provider example.com/test/nope", "(repository oci-layout:", "/test/nope)"},
		"example.com/test/hello@9.9.9":     {"provider example.com/test/hello@9.9.9", "no version 9.9.9"},
		"test/he llo":                      {`address "test/he llo"`, "want [HOST/]NAMESPACE/TYPE"},
		"a/b/c/d/e":                        {`address "a/b/c/d/e"`, "5 part"},
		"test/hello@1.x":                   {`address "test/hello@1.x"`, `version "1.x"`},
		"example.com/acme/greeting/aws":    {"module example.com/acme/greeting/aws", "give --module-template"},
	} {
		_, err := shown(t, arg, opts, false)
		if err == nil {
			t.Errorf("%s: no error", arg)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", arg, err, w)
			}
		}
	}
	_, err := shown(t, "example.com/test/hello", show.Options{Client: client, Policy: pol}, false)
	if err == nil || !strings.Contains(err.Error(), "--provider-template or --module-template") {
		t.Errorf("--policy without a template: %v", err)
	}
}
