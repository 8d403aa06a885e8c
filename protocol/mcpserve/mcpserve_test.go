package mcpserve

import (
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/protocol/show"
)

// Bad combinations are refused with the flags to change, before anything
// is served.
func TestNewServerRefusals(t *testing.T) {
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{}, "give --proxy URL, or --provider-template"},
		{Options{Proxy: "http://proxy.example"}, "want https://HOST"},
		{Options{Proxy: "https://user:pw@proxy.example"}, "want https://HOST"},
		{Options{Proxy: "https://proxy.example", Registry: show.Options{Policy: "p.hcl"}}, "leave out --provider-template"},
		{Options{Proxy: "https://proxy.example", TokenFile: "/nonexistent/token"}, "--token-file"},
	} {
		_, _, err := newServer(c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.opts, err, c.want)
		}
	}
}

// The token tofu would send to a host is read from its TF_TOKEN_
// variable when no other is given.
func TestTokenOfTofusVariable(t *testing.T) {
	t.Setenv("TF_TOKEN_tofu_my__corp_example", "from-tofu")
	got, err := tokenOf(Options{}, "tofu.my-corp.example:8443")
	if err != nil || got != "from-tofu" {
		t.Errorf("token %q, %v", got, err)
	}
	if got, _ := tokenOf(Options{Token: "given"}, "tofu.my-corp.example"); got != "given" {
		t.Errorf("token %q, want the one given", got)
	}
}
