package catalog

import (
	"strings"
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
	u := usageOf(a, "example.com/acme/net/aws", names.MustParseVersion("1.0.0"), nil, `reg.example/acme/${path.cwd}"`, "modules/${path.cwd}%{x}", m)
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

// The snippet's constraint is the loosest that picks the version shown
// among those listed: "~> X.Y" when no later minor is listed, "~> X.Y.Z"
// when no later patch is, else the exact version; a pre-release exactly
// (and no constraint but its own picks one).
func TestConstraintPicksTheVersionShown(t *testing.T) {
	listed := versionList("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0", "1.1.1", "1.2.0", "2.0.0", "2.1.0-beta1", "3.0.0-rc1")
	for v, want := range map[string]string{
		"2.0.0":     "~> 2.0",
		"1.2.0":     "~> 1.2",
		"1.1.1":     "~> 1.1.1",
		"1.1.0":     "1.1.0",
		"1.0.0":     "~> 1.0.0",
		"0.4.0":     "~> 0.4.0",
		"0.3.1":     "~> 0.3.1",
		"0.3.0":     "0.3.0",
		"3.0.0-rc1": "3.0.0-rc1",
		"4.1.0":     "~> 4.1", // not listed: the loosest there is
	} {
		got := constraintFor(names.MustParseVersion(v), listed)
		if got != want {
			t.Errorf("constraintFor(%s) = %q, want %q", v, got, want)
		}
		if strings.HasPrefix(v, "4.") {
			continue
		}
		cs, err := names.ParseConstraints(got)
		if err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		if picked, err := names.SelectVersion(listed, cs, nil); err != nil || picked.String() != v {
			t.Errorf("%q picks %v (%v), want %s", got, picked, err, v)
		}
	}
}

func versionList(vs ...string) names.VersionList {
	var l names.VersionList
	for _, v := range vs {
		l = append(l, names.MustParseVersion(v))
	}
	return l
}
