package names

import "testing"

func TestHostWithoutPort(t *testing.T) {
	for in, want := range map[string]string{
		"registry.example.com":      "registry.example.com",
		"registry.example.com:5000": "registry.example.com",
		"127.0.0.1:443":             "127.0.0.1",
		"[::1]:8443":                "::1",
		"::1":                       "::1",
		"":                          "",
	} {
		if got := HostWithoutPort(in); got != want {
			t.Errorf("HostWithoutPort(%q) = %q, want %q", in, got, want)
		}
	}
}
