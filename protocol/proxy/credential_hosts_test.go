package proxy

import (
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// One credential for every registry (serve --username) and a template
// whose registry host is a placeholder (${hostname}/…) would send the
// proxy's password to whatever host a client names (a provider address
// of the network mirror, a module_id of get_module_details): New refuses
// the pair, naming both. Per-host credentials (a docker config) keep
// the template usable.
func TestOneCredentialNeverGoesToAHostAClientNames(t *testing.T) {
	withPassword, err := oci.NewClient(oci.Options{Username: "proxy", Password: "proxy-Pa55"})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	perHost, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	moduleTpl := mustModuleTemplate(t, "${hostname}/modules/${namespace}/${name}/${system}")
	providerTpl, err := repotemplate.ParseProviderTemplate("${hostname}/mirror/${namespace}/${type}")
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]Options{
		"modules":   {ModuleMappings: []*repotemplate.Template{moduleTpl}},
		"providers": {ProviderMappings: []store.ProviderMapping{{Template: providerTpl, Label: "--provider-template"}}},
	} {
		opts.Client = withPassword
		if _, err := New(opts); err == nil || !strings.Contains(err.Error(), "--username") || !strings.Contains(err.Error(), "${hostname}") {
			t.Errorf("%s: one credential with a client-chosen registry host: %v, want a refusal naming --username and the template", name, err)
		}
		opts.Client = perHost
		if _, err := New(opts); err != nil {
			t.Errorf("%s: per-host credentials: %v", name, err)
		}
	}
}
