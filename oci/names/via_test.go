package names

import "testing"

// Pull URLs and the page name the two protocols with the words they
// always used.
func TestViaIsNamedAsBefore(t *testing.T) {
	for _, c := range []struct {
		via        Via
		code, name string
	}{{ViaMirror, "m", "network mirror"}, {ViaRegistry, "r", "registry protocol"}} {
		if c.via.Code() != c.code || c.via.String() != c.name {
			t.Errorf("%d: code %q name %q, want %q %q", c.via, c.via.Code(), c.via.String(), c.code, c.name)
		}
		if v, ok := ViaOfCode(c.code); !ok || v != c.via {
			t.Errorf("ViaOfCode(%q) = %v, %v", c.code, v, ok)
		}
	}
	if v, ok := ViaOfCode("x"); ok || v == ViaMirror || v == ViaRegistry {
		t.Errorf("ViaOfCode(x) = %v, %v: want neither protocol", v, ok)
	}
}
