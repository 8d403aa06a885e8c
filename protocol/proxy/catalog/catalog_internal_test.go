package catalog

import "testing"

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
