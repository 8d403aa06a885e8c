package catalog

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

func TestClientHost(t *testing.T) {
	for host, want := range map[string]string{
		"Proxy.Example.com":        "proxy.example.com",
		"proxy.example.com:443":    "proxy.example.com",
		"proxy.example.com:8443":   "proxy.example.com:8443",
		"127.0.0.1:40001":          "127.0.0.1:40001",
		"[::1]:8443":               "[::1]:8443",
		"[::1]":                    "[::1]",
		"proxy.example.com:x":      "own",
		"proxy.example.com:":       "own",
		"proxy.example.com:123456": "own",
	} {
		if got := clientHost(host, "own"); got != want {
			t.Errorf("clientHost(%q) = %q, want %q", host, got, want)
		}
	}
}

// Both snippets stay one module block, whatever a package's interface
// and directories hold.
func TestUsageQuotesEverything(t *testing.T) {
	m := &moduledoc.Module{Inputs: []moduledoc.Input{{Name: "net", Type: "object({\n  a = string\n})\n}\nresource \"x\" \"y\" {", Required: true, Description: "x\n}\nevil = 1"}}}
	a := source.ModuleAddress{Host: "example.com", Module: names.Module{Namespace: "acme", Name: "net", System: "aws"}}
	u := usageOf(a, "example.com/acme/net/aws", names.MustParseVersion("1.0.0"), `reg.example/acme/${path.cwd}"`, "modules/${path.cwd}%{x}", m)
	for what, snippet := range map[string]string{"registry": u.Registry, "oci": u.OCI} {
		f, diags := hclsyntax.ParseConfig([]byte(snippet), what, hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("%s snippet does not parse: %v\n%s", what, diags, snippet)
		}
		body := f.Body.(*hclsyntax.Body)
		if len(body.Blocks) != 1 || len(body.Attributes) != 0 {
			t.Fatalf("%s snippet is not one module block:\n%s", what, snippet)
		}
		for name, attr := range body.Blocks[0].Body.Attributes {
			if name != "source" && name != "version" && name != "net" {
				t.Errorf("%s snippet sets %s:\n%s", what, name, snippet)
			}
			if name == "source" {
				if _, ok := attr.Expr.(*hclsyntax.TemplateExpr); ok && len(attr.Expr.Variables()) > 0 {
					t.Errorf("%s snippet's source interpolates:\n%s", what, snippet)
				}
			}
		}
	}
}
