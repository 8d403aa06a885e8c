package main

import (
	"bytes"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/modulesource"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// serve refuses pull-through into a template without ${hostname}, where
// an origin's addresses and the proxy's own share repositories (the
// providers' unless the mapping's filters admit one host only; the
// modules' first template), naming the mapping and the ways out;
// --pull-through-shared-repositories starts it with a warning.
func TestServeRefusesPullThroughIntoSharedRepositories(t *testing.T) {
	provider := func(s string, include ...string) []store.ProviderMapping {
		tpl, err := repotemplate.ParseProviderTemplate(s)
		if err != nil {
			t.Fatal(err)
		}
		return []store.ProviderMapping{{Template: tpl, Include: include, Source: "--provider-template"}}
	}
	module := func(s string) []*repotemplate.Template {
		tpl, err := repotemplate.ParseModuleTemplate(s)
		if err != nil {
			t.Fatal(err)
		}
		return []*repotemplate.Template{tpl}
	}
	f, err := modulesource.New(modulesource.Config{Registry: "registry.opentofu.org"})
	if err != nil {
		t.Fatal(err)
	}
	providers := &pullthrough.Options{Origins: map[string]*url.URL{"registry.opentofu.org": nil}}
	modules := &pullthrough.Options{Modules: []*modulesource.Fetcher{f}}
	for _, c := range []struct {
		name string
		opts proxy.Options
		want string // "" for none
	}{
		{"provider template without hostname", proxy.Options{ProviderMappings: provider("ghcr.io/acme/providers/${namespace}/${type}"), PullThrough: providers}, "--provider-template ghcr.io/acme/providers/${namespace}/${type} has no ${hostname}"},
		{"provider template with hostname", proxy.Options{ProviderMappings: provider("ghcr.io/acme/providers/${hostname}/${namespace}/${type}"), PullThrough: providers}, ""},
		{"one origin host included", proxy.Options{ProviderMappings: provider("ghcr.io/acme/providers/${namespace}/${type}", "registry.opentofu.org/hashicorp/*", "registry.opentofu.org/acme/*"), PullThrough: providers}, ""},
		{"two hosts included", proxy.Options{ProviderMappings: provider("ghcr.io/acme/providers/${namespace}/${type}", "registry.opentofu.org/*/*", "tofu.example.com/*/*"), PullThrough: providers}, "has no ${hostname}"},
		{"a wildcard host", proxy.Options{ProviderMappings: provider("ghcr.io/acme/providers/${namespace}/${type}", "*/hashicorp/*"), PullThrough: providers}, "has no ${hostname}"},
		{"no provider pull-through", proxy.Options{ProviderMappings: provider("ghcr.io/acme/providers/${namespace}/${type}"), ModuleMappings: module("ghcr.io/acme/modules/${hostname}/${namespace}/${name}/${system}"), PullThrough: modules}, ""},
		{"module template without hostname", proxy.Options{ModuleMappings: module("ghcr.io/acme/modules/${namespace}/${name}/${system}"), PullThrough: modules}, "--module-template ghcr.io/acme/modules/${namespace}/${name}/${system} has no ${hostname}"},
		{"no pull-through", proxy.Options{ProviderMappings: provider("ghcr.io/acme/providers/${namespace}/${type}")}, ""},
	} {
		var log bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&log, nil))
		err := checkSharedRepositories(c.opts, false, logger)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--pull-through-shared-repositories")):
			t.Errorf("%s: %v, want a refusal saying %q and naming the way out", c.name, err, c.want)
		case c.want != "":
			if err := checkSharedRepositories(c.opts, true, logger); err != nil || !strings.Contains(log.String(), "level=WARN") {
				t.Errorf("%s accepted with --pull-through-shared-repositories: %v, log:\n%s", c.name, err, log.String())
			}
		}
	}
}
