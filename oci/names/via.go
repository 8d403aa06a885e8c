package names

// Via is the protocol a provider is asked for through: the network
// mirror serves any host's providers, the registry protocol those under
// the proxy's own host name. Pull-through takes them from different
// origins.
type Via int

// The protocols a provider is asked for through.
const (
	ViaMirror Via = iota
	ViaRegistry
	// viaNone is what ViaOfCode answers for a code naming neither: no
	// source serves it.
	viaNone Via = -1
)

// String is how the page and the logs name v: "network mirror",
// "registry protocol".
func (v Via) String() string {
	switch v {
	case ViaMirror:
		return "network mirror"
	case ViaRegistry:
		return "registry protocol"
	}
	return "none"
}

// Code is how pull URLs name v: "m", "r".
func (v Via) Code() string {
	switch v {
	case ViaMirror:
		return "m"
	case ViaRegistry:
		return "r"
	}
	return ""
}

// ViaOfCode is the Via a pull URL's code names; false, and a Via that
// is neither ViaMirror nor ViaRegistry, for a code naming neither.
func ViaOfCode(code string) (Via, bool) {
	switch code {
	case "m":
		return ViaMirror, true
	case "r":
		return ViaRegistry, true
	}
	return viaNone, false
}
