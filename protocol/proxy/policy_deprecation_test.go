package proxy

import (
	"slices"
	"strings"
	"testing"
)

// A deprecated version is listed and served, the versions document
// warning of it with the policy's message; a revoked version is left
// out, the warning and a direct request carrying its message; the page
// shows the deprecation. (How many warnings at most: providers'
// deprecationWarnings.)
func TestPolicyDeprecation(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1"} {
		pushAttested(t, repo, v, nil)
	}
	pol := mustPolicy(t, `
provider "example.com/test/hello" {
  deprecated {
    versions = "< 1.1.0"
    message  = "1.0 is end of life: use 2.x"
  }
  revoked {
    versions = "1.1.0"
    message  = "CVE-2026-0001: leaks the token"
  }
}`)
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: pol, RegistryHostname: "example.com"})

	var vd versionsDoc
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	var listed []string
	for _, v := range vd.Versions {
		listed = append(listed, v.Version)
	}
	if slices.Sort(listed); !slices.Equal(listed, []string{"1.0.0", "2.0.0-rc1"}) {
		t.Errorf("versions lists %v, want all but the revoked 1.1.0", listed)
	}
	const revoked = `example.com/test/hello 1.1.0 is revoked by the policy's rule "example.com/test/hello": CVE-2026-0001: leaks the token`
	want := []string{"1.1.0 is left out: " + revoked, "version 1.0.0 of example.com/test/hello is deprecated: 1.0 is end of life: use 2.x"}
	if !slices.Equal(vd.Warnings, want) {
		t.Errorf("versions warnings:\n%s\nwant:\n%s", strings.Join(vd.Warnings, "\n"), strings.Join(want, "\n"))
	}
	p.wantError(t, "/v1/providers/test/hello/1.1.0/download/linux/amd64", 404, revoked)
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, revoked)
	var d struct{ Packages map[string]any }
	p.getJSON(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 200, &d) // deprecated, still served

	page := string(p.get(t, "/").Body)
	if !strings.Contains(page, `<strong>1.0.0</strong>`) || !strings.Contains(page, `<span class="warn deprecated">deprecated: 1.0 is end of life: use 2.x</span>`) {
		t.Errorf("the page does not show the deprecation:\n%s", page)
	}
}
