package repotemplate

import (
	"maps"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci"
)

func ref(t *testing.T, s string) oci.Reference {
	t.Helper()
	r, err := oci.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Match reads back what Expand wrote: whole segments, ${hostname} as the
// registry host or as host_port inside a path, placeholders sharing a
// segment with literal text, a placeholder used twice; it refuses what
// Expand could not have written and what two addresses share.
func TestMatch(t *testing.T) {
	for _, c := range []struct {
		tpl, repo string
		want      map[string]string // nil: no match
	}{
		{"ghcr.io/acme/providers/${namespace}/${type}", "ghcr.io/acme/providers/hashicorp/aws",
			map[string]string{"namespace": "hashicorp", "type": "aws"}},
		{"ghcr.io/acme/providers/${namespace}/${type}", "ghcr.io/acme/providers/hashicorp", nil},
		{"ghcr.io/acme/providers/${namespace}/${type}", "ghcr.io/acme/providers/hashicorp/aws/x", nil},
		{"ghcr.io/acme/providers/${namespace}/${type}", "ghcr.io/acme/other/hashicorp/aws", nil},
		{"ghcr.io/acme/providers/${namespace}/${type}", "quay.io/acme/providers/hashicorp/aws", nil},
		{"oci-layout:/srv/store/${namespace}/${type}", "oci-layout:/srv/store/a..b/x", nil},
		{"oci-layout:/srv/store/${namespace}/${type}", "oci-layout:/srv/store/../x", nil},
		{"oci-layout:/srv/store/${namespace}/${type}", "oci-layout:/srv/store/a..b/x", nil},
		{"oci-layout:/srv/store/${namespace}/${type}", "oci-layout:/srv/store/../x", nil},
		{"ghcr.io/acme/${hostname}/${namespace}/${type}", "ghcr.io/acme/localhost_8443/ns/ty",
			map[string]string{"hostname": "localhost:8443", "namespace": "ns", "type": "ty"}},
		{"ghcr.io/acme/${hostname}/${namespace}/${type}", "ghcr.io/acme/registry.opentofu.org/ns/ty",
			map[string]string{"hostname": "registry.opentofu.org", "namespace": "ns", "type": "ty"}},
		{"ghcr.io/acme/${hostname}/${namespace}/${type}", "ghcr.io/acme/a_1_2/ns/ty", nil},
		{"ghcr.io/acme/${hostname}/${namespace}/${type}", "ghcr.io/acme/a_b/ns/ty", nil},
		{"${hostname}/mirror/${namespace}/${type}", "localhost:5000/mirror/ns/ty",
			map[string]string{"hostname": "localhost:5000", "namespace": "ns", "type": "ty"}},
		{"${hostname}/mirror/${namespace}/${type}", "localhost_5000/mirror/ns/ty", nil},
		{"ghcr.io/acme/tofu-${namespace}/${type}-provider", "ghcr.io/acme/tofu-hashicorp/aws-provider",
			map[string]string{"namespace": "hashicorp", "type": "aws"}},
		{"ghcr.io/acme/tofu-${namespace}/${type}-provider", "ghcr.io/acme/tofu-hashicorp/aws", nil},
		{"ghcr.io/acme/${namespace}-${type}", "ghcr.io/acme/a-b", map[string]string{"namespace": "a", "type": "b"}},
		{"ghcr.io/acme/${namespace}-${type}", "ghcr.io/acme/a-b-c", nil}, // a/b-c or a-b/c
		{"ghcr.io/acme/${namespace}/${type}/${namespace}", "ghcr.io/acme/a/b/a", map[string]string{"namespace": "a", "type": "b"}},
		{"ghcr.io/acme/${namespace}/${type}/${namespace}", "ghcr.io/acme/a/b/c", nil},
		{"oci-layout:/srv/store/${namespace}/${type}", "oci-layout:/srv/store/acme/x", map[string]string{"namespace": "acme", "type": "x"}},
		{"oci-layout:/srv/store/${namespace}/${type}", "oci-layout:/srv/store/Acme/x", nil},
		{"oci-layout:/srv/store/${namespace}/${type}", "ghcr.io/srv/store/acme/x", nil},
		{"oci-layout:./store/${namespace}/${type}/${hostname}", "oci-layout:./store/a/b/localhost_1",
			map[string]string{"namespace": "a", "type": "b", "hostname": "localhost:1"}},
	} {
		tpl, err := ParseProviderTemplate(c.tpl)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := tpl.Match(ref(t, c.repo))
		if ok != (c.want != nil) || !maps.Equal(got, c.want) {
			t.Errorf("%s matching %s: %v %v, want %v", c.tpl, c.repo, got, ok, c.want)
		}
	}
	mod, err := ParseModuleTemplate("reg.example/modules/${namespace}/${name}/${system}")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := mod.Match(ref(t, "reg.example/modules/acme/net/aws")); !ok || !maps.Equal(got, map[string]string{"namespace": "acme", "name": "net", "system": "aws"}) {
		t.Errorf("module: %v %v", got, ok)
	}
	tpl, _ := ParseProviderTemplate("ghcr.io/acme/${namespace}/${type}")
	if got, ok := tpl.Match(ref(t, "ghcr.io/acme/a/b:1.0.0")); ok {
		t.Errorf("a tagged reference matched: %v", got)
	}
}

func TestListPrefix(t *testing.T) {
	for _, c := range []struct{ tpl, host, prefix string }{
		{"ghcr.io/acme/providers/${namespace}/${type}", "ghcr.io", "acme/providers/"},
		{"localhost:5000/p-${namespace}/${type}", "localhost:5000", "p-"},
		{"localhost:5000/${namespace}/${type}", "localhost:5000", ""},
		{"${hostname}/mirror/${namespace}/${type}", "", ""},
		{"oci-layout:/srv/store/providers/${namespace}/${type}", oci.LayoutPrefix, "/srv/store/providers/"},
	} {
		tpl, err := ParseProviderTemplate(c.tpl)
		if err != nil {
			t.Fatal(err)
		}
		if h, p := tpl.ListPrefix(); h != c.host || p != c.prefix {
			t.Errorf("%s: %q %q, want %q %q", c.tpl, h, p, c.host, c.prefix)
		}
	}
}

// checkRoundTrip is the property Match keeps: a repository Expand makes of
// v matches v, or (a template whose placeholders share a segment) two
// assignments expand to it and Match refuses it; whatever matches
// expands back to the repository.
func checkRoundTrip(t *testing.T, tpl *Template, v map[string]string) {
	r, err := tpl.Expand(v)
	if err != nil {
		return
	}
	want := map[string]string{}
	for _, name := range tpl.vars {
		want[name] = lower(v[name])
	}
	got, ok := tpl.Match(r)
	switch {
	case ok && !maps.Equal(got, want):
		t.Fatalf("%s: %v expands to %s, which matches %v", tpl, v, r, got)
	case !ok:
		both := tpl.parses(r.Name(), 2)
		if len(both) != 2 {
			t.Fatalf("%s: %v expands to %s, which does not match (parses %v)", tpl, v, r, both)
		}
		for _, p := range both {
			if back, err := tpl.Expand(p); err != nil || back != r {
				t.Fatalf("%s: parse %v of %s expands to %s %v", tpl, p, r, back, err)
			}
		}
	}
	if ok {
		if back, err := tpl.Expand(got); err != nil || back != r {
			t.Fatalf("%s: %s matches %v, which expands to %s %v", tpl, r, got, back, err)
		}
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// FuzzTemplateMatch: for any template that parses and any values it
// expands, Match inverts Expand (checkRoundTrip); any repository that
// matches expands back to itself.
func FuzzTemplateMatch(f *testing.F) {
	for _, s := range []string{
		"ghcr.io/acme/providers/${namespace}/${type}", "oci-layout:/srv/oci/${namespace}/${type}",
		"ghcr.io/acme/${hostname}/${namespace}/${type}", "${hostname}/m/${namespace}/${type}",
		"ghcr.io/a/${namespace}-${type}", "ghcr.io/a/${namespace}${type}", "ghcr.io/x-${hostname}.${namespace}/${type}",
		"oci-layout:./s/${type}_${namespace}/${hostname}",
	} {
		f.Add(s, "hashicorp", "aws", "localhost:8443", "ghcr.io/acme/providers/a/b")
		f.Add(s, "a-b", "c", "registry.opentofu.org", "oci-layout:/srv/oci/a/b")
	}
	f.Fuzz(func(t *testing.T, s, ns, typ, host, repo string) {
		tpl, err := ParseProviderTemplate(s)
		if err != nil {
			return
		}
		checkRoundTrip(t, tpl, map[string]string{"hostname": host, "namespace": ns, "type": typ})
		r, err := oci.ParseReference(repo)
		if err != nil {
			return
		}
		if got, ok := tpl.Match(r); ok {
			if back, err := tpl.Expand(got); err != nil || back != r {
				t.Fatalf("%s: %s matches %v, which expands to %s %v", s, r, got, back, err)
			}
		}
	})
}

// TestMatchRoundTrip runs the round trip over a grid of templates and
// values: names with separators, host names with and without ports.
func TestMatchRoundTrip(t *testing.T) {
	tpls := []string{
		"ghcr.io/acme/providers/${namespace}/${type}", "ghcr.io/acme/${hostname}/${namespace}/${type}",
		"${hostname}/m/${namespace}/${type}", "ghcr.io/a/${namespace}-${type}", "ghcr.io/a/${namespace}${type}",
		"ghcr.io/x-${hostname}.${namespace}/${type}", "oci-layout:./s/${type}_${namespace}/${hostname}",
		"oci-layout:/s/${namespace}/${type}/${hostname}",
	}
	nameVals := []string{"a", "a-b", "a.b", "a_b", "aws", "Hashi-Corp", "x1-2", "a-b-c"}
	hosts := []string{"localhost", "localhost:8443", "registry.opentofu.org", "a-b.c:1", "127.0.0.1:5000"}
	for _, s := range tpls {
		tpl, err := ParseProviderTemplate(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range nameVals {
			for _, typ := range nameVals {
				for _, h := range hosts {
					checkRoundTrip(t, tpl, map[string]string{"hostname": h, "namespace": ns, "type": typ})
				}
			}
		}
	}
}
