package policy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ParseAddress reads an address as policy test and push --policy-address
// take it: "tofu" (TofuAddress); a module, with a "module:" prefix or four
// segments, [host/]namespace/name/system (names.OpenTofuRegistryHost when the host
// is left out); a provider otherwise, optionally "provider:"-prefixed, as
// names.ParseProvider reads it. The address is in the form rules match.
func ParseAddress(s string) (names.Kind, string, error) {
	if s == TofuAddress {
		return names.KindTofu, s, nil
	}
	if rest, ok := strings.CutPrefix(s, "module:"); ok || strings.Count(s, "/") == 3 {
		if !ok {
			rest = s
		}
		parts, ok := withDefaultHost(strings.Split(strings.ToLower(rest), "/"))
		if !ok {
			return "", "", errors.New("a module address is [host/]namespace/name/system")
		}
		return names.KindModule, strings.Join(parts, "/"), nil
	}
	p, err := names.ParseProvider(strings.TrimPrefix(s, "provider:"))
	if err != nil {
		return "", "", err
	}
	return names.KindProvider, p.String(), nil
}

// withDefaultHost puts names.OpenTofuRegistryHost before a module's
// namespace/name/system; ok is whether there are then four segments.
func withDefaultHost(parts []string) ([]string, bool) {
	if len(parts) == 3 {
		parts = append([]string{names.OpenTofuRegistryHost}, parts...)
	}
	return parts, len(parts) == 4
}

// Access says whether the client may read an address of kind (any for
// tofu), as serve decides it before anything else (docs/policy.md,
// "Clients"), and why, naming the client and the pattern.
func (c *Client) Access(kind names.Kind, address string, now time.Time) (reads bool, reason string) {
	if kind == names.KindTofu {
		address = ""
	}
	pattern, ok := c.Reads(kind, address)
	switch {
	case c.Expired(now):
		return false, fmt.Sprintf("client %s: its tokens expired at %s", c.Name, c.Expires.UTC().Format(time.RFC3339))
	case !ok && kind == names.KindTofu:
		return false, fmt.Sprintf("client %s may not read OpenTofu releases (no tofu = true)", c.Name)
	case !ok:
		return false, fmt.Sprintf("client %s may not read %s: no pattern of its %ss list matches", c.Name, address, kind)
	case kind == names.KindTofu:
		return true, fmt.Sprintf("client %s may read OpenTofu releases", c.Name)
	}
	return true, fmt.Sprintf("client %s may read it (pattern %s)", c.Name, pattern)
}
