package proxy

import "testing"

// Logins are bounded per IPv4 address and per IPv6 /64 (one host's
// usual allocation), whatever the port.
func TestRemoteAddressOfLogins(t *testing.T) {
	for remote, want := range map[string]string{
		"192.0.2.7:443":                "192.0.2.7",
		"192.0.2.7:50000":              "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443":   "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:50000": "2001:db8:1:2::/64",
		"[::ffff:192.0.2.7]:443":       "192.0.2.7",
		"not an address":               "not an address",
		"[2001:db8:1:3:3:4:5:6]:443":   "2001:db8:1:3::/64",
	} {
		if got := remoteAddress(remote); got != want {
			t.Errorf("remoteAddress(%q) = %q, want %q", remote, got, want)
		}
	}
}
