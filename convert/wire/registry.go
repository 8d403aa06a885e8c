// Package wire defines the documents of the protocols OpenTofu and
// Terraform speak, once, for every side that reads or writes them: the
// Provider Registry Protocol, the Provider Network Mirror Protocol, the
// Module Registry Protocol, service discovery and the TofuDL API. The
// proxy serves them, the origin client reads them from public registries,
// and mirror directories hold the network mirror's.
package wire

// Provider Registry Protocol documents (docs/reference.md §5).

// RegistryPlatform is an os/arch pair.
type RegistryPlatform struct {
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

// RegistryVersion is one entry of …/versions.
type RegistryVersion struct {
	Version   string             `json:"version"`
	Protocols []string           `json:"protocols"`
	Platforms []RegistryPlatform `json:"platforms"`
}

// RegistryVersions is the …/versions document.
type RegistryVersions struct {
	Versions []*RegistryVersion `json:"versions"`
	Warnings []string           `json:"warnings,omitempty"`
}

// GPGPublicKey is one entry of signing_keys.gpg_public_keys.
type GPGPublicKey struct {
	KeyID      string `json:"key_id"`
	ASCIIArmor string `json:"ascii_armor"`
}

// RegistryDownload is the …/<version>/download/<os>/<arch> document.
type RegistryDownload struct {
	Protocols           []string    `json:"protocols"`
	OS                  string      `json:"os"`
	Arch                string      `json:"arch"`
	Filename            string      `json:"filename"`
	DownloadURL         string      `json:"download_url"`
	SHASumsURL          string      `json:"shasums_url"`
	SHASumsSignatureURL string      `json:"shasums_signature_url"`
	SHASum              string      `json:"shasum"`
	SigningKeys         SigningKeys `json:"signing_keys"`
	// Packages, when present, lists every platform's hashes and size
	// (OpenTofu 1.12): tofu then records all of them in the lock file.
	// When present it must cover every platform of the version.
	Packages map[string]RegistryPackage `json:"packages,omitempty"`
}

// SigningKeys holds the keys that may have signed SHA256SUMS.
type SigningKeys struct {
	GPGPublicKeys []GPGPublicKey `json:"gpg_public_keys"`
}

// RegistryPackage is one platform's entry of a download document's
// packages object.
type RegistryPackage struct {
	Hashes      []string `json:"hashes"`
	PackageSize int64    `json:"package_size,omitempty"`
}
