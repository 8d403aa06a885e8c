package mcpserve

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// connect is a client session with srv over in-memory transports,
// closed when the test ends.
func connect(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
