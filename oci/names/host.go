package names

import "net"

// HostWithoutPort is the host of host:port, or hostport as it is when it
// has no port (an address's hostname as the policy matches it; a
// request's Host or remote address as the proxy logs and checks it).
func HostWithoutPort(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}
