package catalog

import (
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Prefix is where the catalogue is served:
//
//	/catalog/                                          every module held (?q=, ?page=)
//	/catalog/modules/HOST/NAMESPACE/NAME/SYSTEM         a module, at its newest version
//	/catalog/modules/HOST/NAMESPACE/NAME/SYSTEM/VERSION that version
//	…/VERSION/modules/DIR, …/VERSION/examples/DIR       a submodule or an example
//	/catalog/providers/HOST/NAMESPACE/TYPE              a provider, at its newest version
//	/catalog/providers/HOST/NAMESPACE/TYPE/VERSION      that version (?platform=OS_ARCH…)
//	…/VERSION/docs/CATEGORY                             a category of its documentation (?page=)
//	…/VERSION/docs/CATEGORY/SLUG                        a page of its documentation
//	/catalog/tofu[/VERSION]                             the OpenTofu releases, one shown
//
// Each answers JSON instead of HTML with ?format=json or an Accept header
// asking for application/json.
const Prefix = "/catalog/"

// maxDirName bounds a submodule's or an example's directory name in a
// path (it is only looked up among those the interface lists).
const maxDirName = 255

// Request is a parsed catalogue path.
type Request struct {
	// Index: the list of modules; nothing else is set.
	Index   bool
	Address source.ModuleAddress
	// Version is the version asked for; nil: the newest.
	Version *names.Version
	// Dir is "modules/DIR" or "examples/DIR" for a submodule or an
	// example; "" for the root module.
	Dir string
	// Provider is set for a provider's page (Address is then unset).
	Provider *names.Provider
	// Doc is a page of the provider version's documentation, when asked.
	Doc *DocPath
	// Tofu: the OpenTofu releases' page (Version: the one shown).
	Tofu bool
}

// ParsePath parses the escaped path below Prefix.
func ParsePath(escaped string) (Request, error) {
	if escaped == "" {
		return Request{Index: true}, nil
	}
	if rest, ok := strings.CutPrefix(escaped, "providers/"); ok {
		return parseProviderPath(rest)
	}
	if escaped == "tofu" || strings.HasPrefix(escaped, "tofu/") {
		return parseTofuPath(strings.TrimPrefix(escaped, "tofu"))
	}
	rest, ok := strings.CutPrefix(escaped, "modules/")
	if !ok {
		return Request{}, respond.BadPath("want modules/HOST/NAMESPACE/NAME/SYSTEM[/VERSION]")
	}
	n := strings.Count(rest, "/") + 1
	if n != 4 && n != 5 && n != 7 {
		return Request{}, respond.BadPath("want modules/HOST/NAMESPACE/NAME/SYSTEM[/VERSION[/modules/DIR or /examples/DIR]]")
	}
	seg, err := respond.SplitPath(rest, n)
	if err != nil {
		return Request{}, err
	}
	var req Request
	if req.Address, err = parseAddress(seg); err != nil {
		return Request{}, err
	}
	if n >= 5 {
		v, err := respond.ParseVersion(seg[4])
		if err != nil {
			return Request{}, err
		}
		req.Version = &v
	}
	if n == 7 {
		if req.Dir, err = parseDir(seg[5], seg[6]); err != nil {
			return Request{}, err
		}
	}
	return req, nil
}

// parseProviderPath reads HOST/NAMESPACE/TYPE[/VERSION[/docs/CATEGORY[/SLUG]]].
func parseProviderPath(rest string) (Request, error) {
	n := strings.Count(rest, "/") + 1
	if n < 3 || n > 7 || n == 5 {
		return Request{}, respond.BadPath("want providers/HOST/NAMESPACE/TYPE[/VERSION[/docs/CATEGORY[/SLUG]]]")
	}
	seg, err := respond.SplitPath(rest, n)
	if err != nil {
		return Request{}, err
	}
	p, err := respond.ParseProvider(seg[0], seg[1], seg[2])
	if err != nil {
		return Request{}, err
	}
	req := Request{Provider: &p}
	if n >= 4 {
		v, err := respond.ParseVersion(seg[3])
		if err != nil {
			return Request{}, err
		}
		req.Version = &v
	}
	if n >= 6 {
		if req.Doc, err = parseDocPath(seg[4:]); err != nil {
			return Request{}, err
		}
	}
	return req, nil
}

// parseAddress reads HOST/NAMESPACE/NAME/SYSTEM.
func parseAddress(seg []string) (source.ModuleAddress, error) {
	host, err := respond.ParseHostname(seg[0])
	if err != nil {
		return source.ModuleAddress{}, err
	}
	m, err := names.ParseModule(seg[1], seg[2], seg[3])
	if err != nil {
		return source.ModuleAddress{}, respond.BadPath("%v", err)
	}
	return source.ModuleAddress{Host: host, Module: m}, nil
}

// parseDir reads modules/DIR or examples/DIR.
func parseDir(kind, dir string) (string, error) {
	if kind != "modules" && kind != "examples" {
		return "", respond.BadPath("want modules/DIR or examples/DIR, got %s/", kind)
	}
	if dir == "" || len(dir) > maxDirName || strings.ContainsAny(dir, "/\\\x00") {
		return "", respond.BadPath("invalid directory name %q", dir)
	}
	return kind + "/" + dir, nil
}

// ModulePath is the catalogue path of a module (version nil: its newest),
// relative to the server's root, without the leading slash.
func ModulePath(a source.ModuleAddress, v *names.Version) string {
	p := "catalog/modules/" + a.Host + "/" + a.Module.String()
	if v != nil {
		p += "/" + v.String()
	}
	return p
}

// ProviderPath is the catalogue path of a provider (version nil: its
// newest), relative to the server's root, without the leading slash.
func ProviderPath(p names.Provider, v *names.Version) string {
	s := "catalog/providers/" + p.String()
	if v != nil {
		s += "/" + v.String()
	}
	return s
}

// parseTofuPath reads "" or /VERSION (an OpenTofu version as TofuDL
// lists it: no v, MAJOR.MINOR.PATCH with an optional -alphaN, -betaN or
// -rcN).
func parseTofuPath(rest string) (Request, error) {
	req := Request{Tofu: true}
	if rest == "" {
		return req, nil
	}
	rest = strings.TrimPrefix(rest, "/")
	if strings.Contains(rest, "/") {
		return Request{}, respond.BadPath("want tofu[/VERSION]")
	}
	seg, err := respond.SplitPath(rest, 1)
	if err != nil {
		return Request{}, err
	}
	v, err := names.ParseTofuVersion(seg[0])
	if err != nil {
		return Request{}, respond.BadPath("%v", err)
	}
	req.Version = &v
	return req, nil
}
