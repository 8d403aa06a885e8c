package repotemplate

import (
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci"
)

func TestProviderTemplate(t *testing.T) {
	tpl, err := ParseProviderTemplate("ghcr.io/acme/providers/${hostname}/${namespace}/${type}")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := tpl.Expand(map[string]string{"hostname": "registry.opentofu.org", "namespace": "HashiCorp", "type": "aws"})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Registry != "ghcr.io" || ref.Repository != "acme/providers/registry.opentofu.org/hashicorp/aws" {
		t.Fatalf("%+v", ref)
	}
	for _, bad := range []map[string]string{
		{"hostname": "h", "namespace": "..", "type": "aws"},
		{"hostname": "h", "namespace": "a/b", "type": "aws"},
		{"hostname": "h", "namespace": "a", "type": "aws:latest"},
		{"hostname": "h/x", "namespace": "a", "type": "aws"},
		{"hostname": "h", "namespace": "", "type": "aws"},
	} {
		if ref, err := tpl.Expand(bad); err == nil {
			t.Errorf("%v expanded to %s", bad, ref)
		}
	}
	layout, err := ParseProviderTemplate("oci-layout:/srv/store/${namespace}/${type}")
	if err != nil {
		t.Fatal(err)
	}
	ref, err = layout.Expand(map[string]string{"namespace": "acme", "type": "x"})
	if err != nil || !ref.Layout || ref.Repository != "/srv/store/acme/x" {
		t.Fatalf("%+v %v", ref, err)
	}
	for _, bad := range []string{"", "ghcr.io/x/${type}", "ghcr.io/${namespace}/${type}/${nope}", "ghcr.io/${namespace}/${type}:1"} {
		tpl, err := ParseProviderTemplate(bad)
		if err == nil {
			_, err = tpl.Expand(map[string]string{"namespace": "a", "type": "b"})
		}
		if err == nil {
			t.Errorf("template %q accepted", bad)
		}
	}
}

func TestParseReference(t *testing.T) {
	for in, want := range map[string]oci.Reference{
		"localhost:5000/a/b":        {Registry: "localhost:5000", Repository: "a/b"},
		"ghcr.io/a/b:1.0.0":         {Registry: "ghcr.io", Repository: "a/b", Reference: "1.0.0"},
		"oci-layout:/tmp/x":         {Layout: true, Repository: "/tmp/x"},
		"oci-layout:./x:1.0.0":      {Layout: true, Repository: "./x", Reference: "1.0.0"},
		"oci-layout:C:/x/y":         {Layout: true, Repository: "C:/x/y"},
		"oci-layout:/x@sha256:abcd": {Layout: true, Repository: "/x", Reference: "sha256:abcd"},
	} {
		got, err := oci.ParseReference(in)
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"https://ghcr.io/a", "noslash", "oci-layout:", "ghcr.io/A/B"} {
		if _, err := oci.ParseReference(bad); err == nil {
			t.Errorf("%q accepted", bad)
		} else if !strings.Contains(err.Error(), "invalid reference") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// ${hostname} with a port: kept as the registry host, "host_port" inside
// a repository or layout path (where ":" is invalid or reads as a tag);
// distinct hosts and ports give distinct repositories, and "_" (never in
// a host name) cannot be given as one.
func TestTemplateHostnameWithPort(t *testing.T) {
	for _, c := range []struct{ tpl, host, want string }{
		{"ghcr.io/acme/${hostname}/${namespace}/${type}", "localhost:8443", "ghcr.io/acme/localhost_8443/ns/ty"},
		{"ghcr.io/acme/${hostname}/${namespace}/${type}", "127.0.0.1:8443", "ghcr.io/acme/127.0.0.1_8443/ns/ty"},
		{"ghcr.io/acme/${hostname}/${namespace}/${type}", "Example.COM", "ghcr.io/acme/example.com/ns/ty"},
		{"ghcr.io/acme/${namespace}/${type}/${hostname}", "localhost:8443", "ghcr.io/acme/ns/ty/localhost_8443"},
		{"${hostname}/mirror/${namespace}/${type}", "localhost:5000", "localhost:5000/mirror/ns/ty"},
		{"oci-layout:/srv/${namespace}/${type}/${hostname}", "localhost:8443", "oci-layout:/srv/ns/ty/localhost_8443"},
	} {
		tpl, err := ParseProviderTemplate(c.tpl)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := tpl.Expand(map[string]string{"hostname": c.host, "namespace": "ns", "type": "ty"})
		if err != nil || ref.String() != c.want {
			t.Errorf("%s with %s: %s %v, want %s", c.tpl, c.host, ref, err, c.want)
		}
	}
	tpl, _ := ParseProviderTemplate("ghcr.io/acme/${hostname}/${namespace}/${type}")
	seen := map[string]string{}
	for _, h := range []string{"localhost", "localhost:8443", "localhost:9443", "localhost-8443", "localhost.8443"} {
		ref, err := tpl.Expand(map[string]string{"hostname": h, "namespace": "ns", "type": "ty"})
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		if other, ok := seen[ref.String()]; ok {
			t.Errorf("%s and %s share %s", h, other, ref)
		}
		seen[ref.String()] = h
	}
	if ref, err := tpl.Expand(map[string]string{"hostname": "localhost_8443", "namespace": "ns", "type": "ty"}); err == nil {
		t.Errorf("hostname localhost_8443 expanded to %s", ref)
	}
}

// FuzzParseProviderTemplate: repository templates from command lines and
// configurations never make the parser panic; an expanded template is a
// repository without tag, whatever the values.
func FuzzParseProviderTemplate(f *testing.F) {
	for _, s := range []string{
		"ghcr.io/acme/providers/${namespace}/${type}", "oci-layout:/srv/oci/${namespace}/${type}",
		"localhost:5000/a/b:1.0.0", "oci-layout:/x@sha256:abc", "reg/${hostname}/${namespace}/${type}:tag",
		"https://x/y", "${namespace}${type}", "",
	} {
		f.Add(s, "hashicorp", "aws")
	}
	f.Fuzz(func(t *testing.T, s, ns, typ string) {
		tpl, err := ParseProviderTemplate(s)
		if err != nil {
			return
		}
		ref, err := tpl.Expand(map[string]string{"hostname": "registry.example", "namespace": ns, "type": typ})
		if err != nil {
			return
		}
		if ref.Reference != "" || strings.Contains(ref.Repository, "..") && !ref.Layout && !strings.Contains(s, "..") {
			t.Fatalf("%q with %q/%q expands to %+v", s, ns, typ, ref)
		}
	})
}
