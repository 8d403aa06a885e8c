package respond

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/opencontainers/go-digest"
)

// Request paths: checked before routing, split into segments and parsed
// into the names the protocols carry; what cannot name anything is a
// BadPath (400).

// errBadPath marks a request whose path cannot name anything (400).
var errBadPath = errors.New("bad request path")

// BadPath is a path that cannot name anything (400), saying why.
func BadPath(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadPath, fmt.Sprintf(format, args...))
}

// MaxPathLen bounds the request paths we parse.
const MaxPathLen = 1024

// SplitPath splits an escaped path (after the handler's prefix) into
// unescaped segments. Every segment must be non-empty, must not be "." or
// "..", and must not contain an encoded "/" or "\", a NUL or any control
// character: none of the names these protocols carry can, so such paths are
// refused rather than interpreted.
func SplitPath(escaped string, n int) ([]string, error) {
	if len(escaped) > MaxPathLen {
		return nil, BadPath("path longer than %d bytes", MaxPathLen)
	}
	raw := strings.Split(escaped, "/")
	if len(raw) != n {
		return nil, BadPath("want %d path segments, got %d", n, len(raw))
	}
	out := make([]string, n)
	for i, s := range raw {
		u, err := url.PathUnescape(s)
		if err != nil {
			return nil, BadPath("segment %q: %v", s, err)
		}
		if u == "" || u == "." || u == ".." {
			return nil, BadPath("empty, \".\" or \"..\" path segment")
		}
		for _, c := range u {
			if c < 0x20 || c == 0x7f || c == '/' || c == '\\' {
				return nil, BadPath("segment %q holds a slash or control character", s)
			}
		}
		out[i] = u
	}
	return out, nil
}

func ParseName(what, s string) (string, error) {
	s = strings.ToLower(s)
	if !names.ValidProviderPart(s) {
		return "", BadPath("invalid provider %s %q", what, s)
	}
	return s, nil
}

func ParseHostname(s string) (string, error) {
	s = strings.ToLower(s)
	if !names.ValidHostname(s) {
		return "", BadPath("invalid hostname %q", s)
	}
	return s, nil
}

func ParseProvider(host, ns, typ string) (names.Provider, error) {
	var p names.Provider
	var err error
	if p.Hostname, err = ParseHostname(host); err != nil {
		return p, err
	}
	if p.Namespace, err = ParseName("namespace", ns); err != nil {
		return p, err
	}
	if p.Type, err = ParseName("type", typ); err != nil {
		return p, err
	}
	return p, nil
}

func ParseVersion(s string) (names.Version, error) {
	v, err := names.ParseVersion(s)
	if err != nil {
		return names.Version{}, BadPath("%v", err)
	}
	return v, nil
}

// CheckRawPath refuses a path, escaped or not, that is too long, not
// absolute, or has dot segments or empty segments.
func CheckRawPath(u *url.URL) error { return CheckPaths(u.EscapedPath(), u.Path) }

// CheckPaths is CheckRawPath of a path's escaped and unescaped forms.
func CheckPaths(escaped, path string) error {
	if err := checkPathSegments(escaped); err != nil || path == escaped {
		return err
	}
	return checkPathSegments(path)
}

func checkPathSegments(p string) error {
	if len(p) > MaxPathLen {
		return BadPath("path longer than %d bytes", MaxPathLen)
	}
	if !strings.HasPrefix(p, "/") {
		return BadPath("path must be absolute")
	}
	for rest := p[1:]; ; {
		seg, after, more := strings.Cut(rest, "/")
		if isDotSegment(seg) {
			return BadPath("dot segments are not allowed in paths")
		}
		if !more {
			break
		}
		if seg == "" {
			return BadPath("empty path segment")
		}
		rest = after
	}
	return nil
}

// isDotSegment says whether seg is ".", "..", or either with its dots
// escaped ("%2e", "%2E%2e", …). Most segments are longer than six bytes
// or start with neither '.' nor '%', and are told at once.
func isDotSegment(seg string) bool {
	if len(seg) == 0 || len(seg) > 6 || seg[0] != '.' && seg[0] != '%' {
		return false
	}
	return seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e")
}

// ParseHexDigest is a path segment naming a sha256 digest: 64
// lowercase hex digits.
func ParseHexDigest(s string) (digest.Digest, error) {
	d := digest.NewDigestFromEncoded(digest.SHA256, s)
	if len(s) != 64 || strings.ToLower(s) != s || d.Validate() != nil {
		return "", BadPath("invalid digest %q", s)
	}
	return d, nil
}
