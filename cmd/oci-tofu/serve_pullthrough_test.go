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
		return []store.ProviderMapping{{Template: tpl, Include: include, Label: "--provider-template"}}
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
		err := pullthrough.CheckShared(c.opts.PullThrough, c.opts.ProviderMappings, c.opts.ModuleMappings, false, logger)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--pull-through-shared-repositories")):
			t.Errorf("%s: %v, want a refusal saying %q and naming the way out", c.name, err, c.want)
		case c.want != "":
			if err := pullthrough.CheckShared(c.opts.PullThrough, c.opts.ProviderMappings, c.opts.ModuleMappings, true, logger); err != nil || !strings.Contains(log.String(), "level=WARN") {
				t.Errorf("%s accepted with --pull-through-shared-repositories: %v, log:\n%s", c.name, err, log.String())
			}
		}
	}
}

// Pull-through under the proxy's own name (--pull-through-registry-origin,
// --pull-through-own-modules) stores under the proxy's own host name, which
// a request's Host cannot tell (the client chooses it): serve refuses to
// start with either unless --registry-hostname or --public-url names it,
// and says why.
func TestServeRefusesOwnNamePullThroughWithoutItsHostName(t *testing.T) {
	dir := t.TempDir()
	base := []string{"oci-tofu", "serve", "--check", "--insecure-no-tls",
		"--provider-template", "oci-layout:" + dir + "/${hostname}/${namespace}/${type}",
		"--module-template", "oci-layout:" + dir + "/modules/${hostname}/${namespace}/${name}/${system}"}
	providers := []string{"--pull-through-origin", "registry.opentofu.org", "--pull-through-registry-origin", "registry.opentofu.org"}
	modules := []string{"--pull-through-module-origin", "registry.opentofu.org", "--pull-through-own-modules", "acme/*/aws"}
	for _, c := range []struct {
		name    string
		args    []string
		refused string // the flag named in the refusal; "" for none
	}{
		{"registry origin", providers, "--pull-through-registry-origin"},
		{"own modules", modules, "--pull-through-own-modules"},
		{"registry origin with registry hostname", append([]string{"--registry-hostname", "tofu.example.com"}, providers...), ""},
		{"own modules with public URL", append([]string{"--public-url", "https://tofu.example.com:8443/x"}, modules...), ""},
		{"mirror pull-through alone", []string{"--pull-through-origin", "registry.opentofu.org"}, ""},
		{"origin modules alone", []string{"--pull-through-module-origin", "registry.opentofu.org"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			app := newApp()
			var out bytes.Buffer
			app.Writer, app.ErrWriter = &out, &out
			err := app.Run(append(append([]string{}, base...), c.args...))
			switch {
			case c.refused == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.refused != "" && err == nil:
				t.Errorf("started without --registry-hostname or --public-url:\n%s", out.String())
			case c.refused != "":
				for _, want := range []string{c.refused, "--registry-hostname", "--public-url", "Host"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the refusal does not say %q: %v", want, err)
					}
				}
			}
		})
	}
}
