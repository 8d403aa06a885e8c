package convert

import (
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci"
)

// ProviderFileKind says what a file in a provider release is.
type ProviderFileKind int

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
	Platform oci.Platform
}

const providerPrefix = "terraform-provider-"

// ParseProviderFilename parses a provider release file name. The version
// must be canonical semver, the type a valid provider type name.
func ParseProviderFilename(name string) (ProviderFile, error) {
	if strings.ContainsAny(name, "/\\\x00") {
		return ProviderFile{}, fmt.Errorf("%q: a file name, not a path, is expected", name)
	}
	rest, ok := strings.CutPrefix(name, providerPrefix)
	if !ok {
		return ProviderFile{}, fmt.Errorf("%s: not a provider release file (want %s<type>_<version>_…)", name, providerPrefix)
	}
	var f ProviderFile
	var parts []string
	switch {
	case strings.HasSuffix(rest, ".zip"):
		f.Kind = ProviderZip
		parts = strings.Split(strings.TrimSuffix(rest, ".zip"), "_")
		if len(parts) != 4 {
			return ProviderFile{}, fmt.Errorf("%s: want %s<type>_<version>_<os>_<arch>.zip", name, providerPrefix)
		}
		p, err := oci.ParsePlatform(parts[2] + "_" + parts[3])
		if err != nil {
			return ProviderFile{}, fmt.Errorf("%s: %w", name, err)
		}
		f.Platform = p
	case strings.HasSuffix(rest, "_SHA256SUMS"):
		f.Kind = ProviderSHA256SUMS
		parts = strings.Split(strings.TrimSuffix(rest, "_SHA256SUMS"), "_")
	case strings.HasSuffix(rest, ".sig") && strings.Contains(rest, "_SHA256SUMS."):
		f.Kind = ProviderSignature
		base, keyID, _ := strings.Cut(strings.TrimSuffix(rest, ".sig"), "_SHA256SUMS")
		if keyID != "" && !validKeyIDSuffix(keyID) {
			return ProviderFile{}, fmt.Errorf("%s: want %s<type>_<version>_SHA256SUMS[.<key id>].sig", name, providerPrefix)
		}
		parts = strings.Split(base, "_")
	case strings.HasSuffix(rest, "_manifest.json"):
		f.Kind = ProviderManifest
		parts = strings.Split(strings.TrimSuffix(rest, "_manifest.json"), "_")
	default:
		return ProviderFile{}, fmt.Errorf("%s: not a provider zip, SHA256SUMS, signature or manifest.json", name)
	}
	if f.Kind != ProviderZip && len(parts) != 2 {
		return ProviderFile{}, fmt.Errorf("%s: want %s<type>_<version>_…", name, providerPrefix)
	}
	f.Type, f.Version = parts[0], parts[1]
	if !oci.ValidProviderPart(f.Type) {
		return ProviderFile{}, fmt.Errorf("%s: invalid provider type %q", name, f.Type)
	}
	if _, err := oci.ParseVersion(f.Version); err != nil {
		return ProviderFile{}, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
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
