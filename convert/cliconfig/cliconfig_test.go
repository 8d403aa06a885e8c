package cliconfig_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/cliconfig"
)

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tofu.rc")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadOCIMirrors(t *testing.T) {
	got, err := cliconfig.ReadOCIMirrors(write(t, `
credentials "example.com" { token = "x" }
provider_installation {
  oci_mirror {
    repository_template = "ghcr.io/acme/hashicorp/${type}"
    include             = ["hashicorp/*"]
  }
  oci_mirror {
    repository_template = "harbor.example.com/tofu/${hostname}/${namespace}/${type}"
    exclude             = ["registry.opentofu.org/hashicorp/*"]
  }
  direct {}
}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].RepositoryTemplate != "ghcr.io/acme/hashicorp/${type}" ||
		!reflect.DeepEqual(got[0].Include, []string{"registry.opentofu.org/hashicorp/*"}) ||
		!reflect.DeepEqual(got[1].Exclude, []string{"registry.opentofu.org/hashicorp/*"}) {
		t.Fatalf("%+v", got)
	}
	ref, err := got[0].Template.Expand(map[string]string{"hostname": "registry.opentofu.org", "namespace": "hashicorp", "type": "aws"})
	if err != nil || ref.String() != "ghcr.io/acme/hashicorp/aws" {
		t.Errorf("expand: %v %v", ref, err)
	}
	ref, err = got[1].Template.Expand(map[string]string{"hostname": "example.com", "namespace": "acme", "type": "widgets"})
	if err != nil || ref.String() != "harbor.example.com/tofu/example.com/acme/widgets" {
		t.Errorf("expand: %v %v", ref, err)
	}
}

// The rules tofu 1.12 applies to provider_installation (its
// internal/command/cliconfig and getproviders): each file is accepted or
// refused with tofu's message. e2e's TestServeConfigDifferential checks the
// same files against the tofu binary.
func TestOCIMirrorRules(t *testing.T) {
	block := func(body string) string {
		return "provider_installation {\n  oci_mirror {\n" + body + "\n  }\n}\n"
	}
	for _, tc := range []struct {
		name, file, err string
	}{
		{"all symbols", block(`repository_template = "r.io/${hostname}/${namespace}/${type}"`), ""},
		{"one namespace included", block(`repository_template = "r.io/acme/${type}"
include = ["example.com/acme/*"]`), ""},
		{"one provider included", block(`repository_template = "r.io/widgets"
include = ["example.com/acme/widgets"]`), ""},
		{"spaces in interpolation", block(`repository_template = "r.io/${ hostname }/${namespace}/${ type }"`), ""},
		{"directive", block(`repository_template = "r.io/%{ if namespace == \"hashicorp\" }official%{ else }${namespace}%{ endif }/${hostname}/${type}"`), ""},
		{"namespace missing", block(`repository_template = "r.io/${hostname}/${type}"`), `template must refer to the "namespace" symbol`},
		{"hostname missing for many hosts", block(`repository_template = "r.io/${namespace}/${type}"
include = ["a.example.com/*/*", "b.example.com/*/*"]`), `template must refer to the "hostname" symbol`},
		{"hostname missing, excludes only", block(`repository_template = "r.io/${namespace}/${type}"
exclude = ["blocked.example.com/*/*"]`), `"hostname" symbol`},
		{"wildcard host with namespace", block(`repository_template = "r.io/${hostname}/${namespace}/${type}"
include = ["*/acme/*"]`), "hostname can be a wildcard only if both namespace and provider type are also wildcards"},
		{"partial glob", block(`repository_template = "r.io/${hostname}/${namespace}/${type}"
exclude = ["example.com/hashi*/aws"]`), "in provider matching pattern"},
		{"one segment", block(`repository_template = "r.io/${hostname}/${namespace}/${type}"
include = ["aws"]`), "must have either two or three slash-separated segments"},
		{"unknown symbol", block(`repository_template = "r.io/${hostname}/${namespace}/${kind}"`), `the symbol "kind" is not available`},
		{"scheme", block(`repository_template = "https://r.io/${hostname}/${namespace}/${type}"`), "template must generate a valid OCI repository address"},
		{"tag", block(`repository_template = "r.io/${hostname}/${namespace}/${type}:latest"`), "template must generate a valid OCI repository address"},
		{"no template", block(`include = ["example.com/*/*"]`), `"repository_template" argument is required`},
		{"bad template syntax", block(`repository_template = "r.io/%{ if }/${namespace}/${type}"`), "<oci_mirror repository_template>"},
		{"two blocks", block(`repository_template = "r.io/${hostname}/${namespace}/${type}"`) + block(`repository_template = "r.io/${hostname}/${namespace}/${type}"`), "No more than one provider_installation block may be specified"},
		{"unknown method", "provider_installation {\n  oci_mirro {\n    repository_template = \"r.io/${hostname}/${namespace}/${type}\"\n  }\n}\n", `Unknown provider installation method "oci_mirro"`},
		{"network mirror without url", "provider_installation {\n  network_mirror {}\n  oci_mirror {\n    repository_template = \"r.io/${hostname}/${namespace}/${type}\"\n  }\n}\n", `"url" argument is required`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cliconfig.ReadOCIMirrors(write(t, tc.file))
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("want an error with %q, got %v", tc.err, err)
			}
		})
	}
	if _, err := cliconfig.ReadOCIMirrors(write(t, "provider_installation {\n  direct {}\n}\n")); err == nil || !strings.Contains(err.Error(), "no provider_installation") {
		t.Errorf("no oci_mirror: %v", err)
	}
}

func TestParseMatchingPatterns(t *testing.T) {
	got, err := cliconfig.ParseMatchingPatterns([]string{"hashicorp/*", "Example.COM/Acme/Widgets", "*/*/*", "example.com/*/*"})
	want := []string{"registry.opentofu.org/hashicorp/*", "example.com/acme/widgets", "*/*/*", "example.com/*/*"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %v %v, want %v", got, err, want)
	}
	for _, bad := range []string{"*/acme/*", "example.com/*/aws", "a/b/c/d", "aws", "example.com/hashi*/aws", "exa mple.com/a/b"} {
		if _, err := cliconfig.ParseMatchingPatterns([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
