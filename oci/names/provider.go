package names

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Default registry hosts of short provider addresses ("namespace/type").
const (
	OpenTofuRegistryHost  = "registry.opentofu.org"
	TerraformRegistryHost = "registry.terraform.io"
)

// Provider is a provider source address: hostname/namespace/type, lower-case.
type Provider struct{ Hostname, Namespace, Type string }

func (p Provider) String() string { return p.Hostname + "/" + p.Namespace + "/" + p.Type }

// TemplateValues are the repository template placeholders for p.
func (p Provider) TemplateValues() map[string]string {
	return map[string]string{"hostname": p.Hostname, "namespace": p.Namespace, "type": p.Type}
}

// ParseProvider reads "type", "namespace/type" or "hostname/namespace/type"
// as OpenTofu does: lower-cased, short forms on registry.opentofu.org (and
// "type" alone in the hashicorp namespace).
func ParseProvider(s string) (Provider, error) {
	return ParseProviderOn(s, OpenTofuRegistryHost)
}

// ParseProviderOn is ParseProvider with another default host, as Terraform
// reads short addresses on registry.terraform.io.
func ParseProviderOn(s, defaultHost string) (Provider, error) {
	if len(s) > 512 {
		return Provider{}, fmt.Errorf("invalid provider address: longer than 512 bytes")
	}
	parts := strings.Split(strings.ToLower(strings.TrimSpace(s)), "/")
	var p Provider
	switch len(parts) {
	case 1:
		p = Provider{defaultHost, "hashicorp", parts[0]}
	case 2:
		p = Provider{defaultHost, parts[0], parts[1]}
	case 3:
		p = Provider{parts[0], parts[1], parts[2]}
	default:
		return p, fmt.Errorf("invalid provider address %q: want [hostname/]namespace/type", s)
	}
	if !ValidHostname(p.Hostname) || !ValidProviderPart(p.Namespace) || !ValidProviderPart(p.Type) {
		return p, fmt.Errorf("invalid provider address %q", s)
	}
	return p, nil
}

var (
	// hostnameRE is a DNS name (IDNs arrive in punycode) with an optional port.
	hostnameRE = lazyRegexp(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:[0-9]{1,5})?$`)
	// providerPartRE is a provider namespace or type as OpenTofu accepts
	// it (lower-cased, ASCII): letters, digits and single inner dashes.
	providerPartRE = lazyRegexp(`^[a-z0-9]+(-[a-z0-9]+)*$`)
)

// ValidProviderPart reports whether s is a provider namespace or type:
// lower-case letters and digits, single dashes inside, at most 64 bytes.
func ValidProviderPart(s string) bool { return len(s) <= 64 && providerPartRE().MatchString(s) }

// ValidHostname reports whether s is a host name (lower-case DNS labels)
// with an optional port, as provider and module addresses use them.
func ValidHostname(s string) bool { return len(s) <= 255 && hostnameRE().MatchString(s) }

// ProviderSpec is an address with optional version constraints, as written
// on the command line: "hashicorp/aws@~> 5.0".
type ProviderSpec struct {
	Provider    Provider
	Constraints Constraints
}

// ParseProviderSpec reads ADDRESS[@CONSTRAINT].
func ParseProviderSpec(s string) (ProviderSpec, error) {
	addr, cons, _ := strings.Cut(s, "@")
	p, err := ParseProvider(addr)
	if err != nil {
		return ProviderSpec{}, err
	}
	c, err := ParseConstraints(cons)
	if err != nil {
		return ProviderSpec{}, err
	}
	return ProviderSpec{Provider: p, Constraints: c}, nil
}

// The files of a provider release, and their names.

// ProviderFileKind says what a file in a provider release is.
type ProviderFileKind int

// The files of a provider release.
const (
	ProviderZip ProviderFileKind = iota + 1
	ProviderSHA256SUMS
	ProviderSignature
	ProviderManifest
)

// ProviderFile is a parsed provider release file name:
// terraform-provider-<type>_<version>_<os>_<arch>.zip,
// …_<version>_SHA256SUMS, …_SHA256SUMS.sig (or …_SHA256SUMS.<keyid>.sig),
// …_<version>_manifest.json.
type ProviderFile struct {
	Kind     ProviderFileKind
	Type     string
	Version  string
	Platform Platform
}

// ProviderFilePrefix starts every provider release file name.
const ProviderFilePrefix = "terraform-provider-"

// ProviderZipName is the release file name of a platform's package.
func ProviderZipName(typ, version string, p Platform) string {
	return ProviderFilePrefix + typ + "_" + version + "_" + p.String() + ".zip"
}

// ProviderSHA256SUMSName is the release's checksum file name.
func ProviderSHA256SUMSName(typ, version string) string {
	return ProviderFilePrefix + typ + "_" + version + "_SHA256SUMS"
}

// ProviderSignatureName is the name of SHA256SUMS's detached signature.
func ProviderSignatureName(typ, version string) string {
	return ProviderSHA256SUMSName(typ, version) + ".sig"
}

// ProviderManifestName is the release manifest's file name.
func ProviderManifestName(typ, version string) string {
	return ProviderFilePrefix + typ + "_" + version + "_manifest.json"
}

// ParseProviderFilename parses a provider release file name. The version
// must be canonical semver, the type a valid provider type name.
func ParseProviderFilename(name string) (ProviderFile, error) {
	if len(name) > 255 {
		return ProviderFile{}, fmt.Errorf("file name longer than 255 bytes")
	}
	if strings.ContainsAny(name, "/\\\x00") {
		return ProviderFile{}, fmt.Errorf("%q: a file name, not a path, is expected", name)
	}
	rest, ok := strings.CutPrefix(name, ProviderFilePrefix)
	if !ok {
		return ProviderFile{}, fmt.Errorf("%s: not a provider release file (want %s<type>_<version>_…)", name, ProviderFilePrefix)
	}
	f, parts, err := splitProviderFilename(name, rest)
	if err != nil {
		return ProviderFile{}, err
	}
	f.Type, f.Version = parts[0], parts[1]
	if !ValidProviderPart(f.Type) {
		return ProviderFile{}, fmt.Errorf("%s: invalid provider type %q", name, f.Type)
	}
	if _, err := ParseVersion(f.Version); err != nil {
		return ProviderFile{}, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

// splitProviderFilename tells the kind of file from its suffix and splits
// the rest of the name into its "_"-separated parts (type and version
// first).
func splitProviderFilename(name, rest string) (ProviderFile, []string, error) {
	var f ProviderFile
	var parts []string
	switch {
	case strings.HasSuffix(rest, ".zip"):
		f.Kind = ProviderZip
		parts = strings.Split(strings.TrimSuffix(rest, ".zip"), "_")
		if len(parts) != 4 {
			return f, nil, fmt.Errorf("%s: want %s<type>_<version>_<os>_<arch>.zip", name, ProviderFilePrefix)
		}
		p, err := ParsePlatform(parts[2] + "_" + parts[3])
		if err != nil {
			return f, nil, fmt.Errorf("%s: %w", name, err)
		}
		return ProviderFile{Kind: ProviderZip, Platform: p}, parts, nil
	case strings.HasSuffix(rest, "_SHA256SUMS"):
		f.Kind = ProviderSHA256SUMS
		parts = strings.Split(strings.TrimSuffix(rest, "_SHA256SUMS"), "_")
	case strings.HasSuffix(rest, ".sig") && strings.Contains(rest, "_SHA256SUMS."):
		f.Kind = ProviderSignature
		base, keyID, _ := strings.Cut(strings.TrimSuffix(rest, ".sig"), "_SHA256SUMS")
		if keyID != "" && !validKeyIDSuffix(keyID) {
			return f, nil, fmt.Errorf("%s: want %s<type>_<version>_SHA256SUMS[.<key id>].sig", name, ProviderFilePrefix)
		}
		parts = strings.Split(base, "_")
	case strings.HasSuffix(rest, "_manifest.json"):
		f.Kind = ProviderManifest
		parts = strings.Split(strings.TrimSuffix(rest, "_manifest.json"), "_")
	default:
		return f, nil, fmt.Errorf("%s: not a provider zip, SHA256SUMS, signature or manifest.json", name)
	}
	if len(parts) != 2 {
		return f, nil, fmt.Errorf("%s: want %s<type>_<version>_…", name, ProviderFilePrefix)
	}
	return f, parts, nil
}

// validKeyIDSuffix accepts the ".<key id>" of HashiCorp-style signature names.
func validKeyIDSuffix(s string) bool {
	s, ok := strings.CutPrefix(s, ".")
	if !ok || s == "" || len(s) > 40 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'F' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// IsProviderExecutable reports whether a file at the top of an unpacked
// package is the executable OpenTofu runs for a provider of type typ:
// "terraform-provider-<type>", then nothing or '_' or '.' and anything
// (OpenTofu v1.12.6, internal/providercache/cached_provider.go,
// ExecutableFile).
func IsProviderExecutable(typ, name string) bool {
	rest, ok := strings.CutPrefix(name, ProviderFilePrefix+typ)
	return ok && (rest == "" || rest[0] == '_' || rest[0] == '.')
}

// RepositoryServesType reports whether a repository path can be the one a
// provider of type typ maps to: its last component is the type, or ends
// with it after '-', '_' or '.' (".../acme/widgets",
// ".../terraform-provider-widgets"), as repository templates name it
// (${type}).
func RepositoryServesType(repository, typ string) bool {
	last := repository[strings.LastIndex(repository, "/")+1:]
	rest, ok := strings.CutSuffix(last, strings.ToLower(typ))
	return ok && (rest == "" || strings.ContainsAny(rest[len(rest)-1:], "-_."))
}

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

// lazyRegexp is expr compiled on first use, not when a program importing
// the package starts: the bounded repetitions of the package's grammars
// ({0,127}, {1,255}) compile to large programs, milliseconds of every
// CLI command's start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
