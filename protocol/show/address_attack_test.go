package show_test

import (
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/protocol/show"
)

// Addresses that climb, smuggle a second host after an @ or a user
// before one, carry a port out of range, a fragment, spaces or a
// second version are refused; none is read as naming a host other
// than the one written (case folded), which a ${hostname} template
// and the registry credentials would then go to.
func TestShowAddressTricks(t *testing.T) {
	for _, arg := range []string{
		"example.com/../hello", "example.com/test/..", "../test/hello", "example.com/test/hello/..",
		"user:pw@evil.com/test/hello", "example.com@evil.com/test/hello", "example.com/test/hello@1.0.0@evil.com",
		"example.com/test/hello@evil.com/x/y", "evil.com#x/test/hello", "evil.com?x/test/hello",
		" example.com/test/hello", "example.com/test/hello ", "example.com//hello", "/test/hello",
		"example.com:99999/test/hello", "-evil.com/test/hello", "evil.com\x00/test/hello", "evil.com%2ftest/test/hello",
		"module:example.com/../x/aws", "module:evil.com@example.com/a/b/aws",
	} {
		a, err := show.ParseAddress(arg, false)
		if err != nil {
			continue
		}
		host := ""
		switch {
		case a.Provider != nil:
			host = a.Provider.Hostname
		case a.Module != nil:
			host = a.Module.Host
		}
		if written, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(arg), "module:"), "provider:"), "/"); !strings.EqualFold(host, written) || strings.Contains(host, "evil") {
			t.Errorf("%q is read as host %q (%s)", arg, host, a.What())
		}
	}
}
