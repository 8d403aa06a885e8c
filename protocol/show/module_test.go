package show_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/show"
)

// greetingLayout holds testdata/modules/greeting as acme/greeting/aws
// 1.0.0 and 1.2.0 (and latest) in an OCI layout; it returns the module
// template.
func greetingLayout(t *testing.T, client *oci.Client) string {
	t.Helper()
	dir := t.TempDir()
	b := seed.TestdataModule(t, "greeting")
	repo, err := client.Open(oci.Reference{Layout: true, Repository: dir + "/acme/greeting/aws"})
	if err != nil {
		t.Fatal(err)
	}
	seed.Push(t, repo, seed.ModuleArtifact(t, b), "1.0.0", "1.2.0", "latest")
	return "oci-layout:" + dir + "/${namespace}/${name}/${system}"
}

// A module by address is shown at its newest version (not the tag
// latest), by address@version at that one, each with the versions and
// the root module's interface; --json is the catalogue's JSON page.
func TestShowModuleByAddress(t *testing.T) {
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tpl := greetingLayout(t, client)
	mt, err := repotemplate.ParseModuleTemplate(tpl)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := proxy.New(proxy.Options{Client: client, ModuleMappings: []*repotemplate.Template{mt}, RegistryHostname: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	web := httpServer(t, srv)
	opts := show.Options{Client: client, ModuleTemplate: tpl}

	out, err := shown(t, "example.com/acme/greeting/aws", opts, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Module example.com/acme/greeting/aws 1.2.0 (the newest served)", "  1.2.0  served\n  1.0.0  served", "Root module (README.md)", "name  string", "Also in the package: modules/shout"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	out, err = shown(t, "acme/greeting/aws@1.0.0", opts, false)
	if err != nil || !strings.Contains(out, "Module registry.opentofu.org/acme/greeting/aws 1.0.0 (the newest served is 1.2.0)") {
		t.Errorf("acme/greeting/aws@1.0.0: %v\n%s", err, out)
	}
	out, err = shown(t, "example.com/acme/greeting/aws@1.0.0", opts, true)
	if err != nil {
		t.Fatal(err)
	}
	var cli map[string]any
	if err := json.Unmarshal([]byte(out), &cli); err != nil {
		t.Fatal(err)
	}
	if page := getJSON(t, web, "/catalog/modules/example.com/acme/greeting/aws/1.0.0"); !reflect.DeepEqual(cli, page) {
		t.Errorf("show --json differs from the catalogue's page:\n%v\n---\n%v", cli, page)
	}
	if _, err := shown(t, "example.com/acme/nothing/aws", opts, false); err == nil || !strings.Contains(err.Error(), "module example.com/acme/nothing/aws (repository oci-layout:") {
		t.Errorf("an unknown module: %v", err)
	}
}
