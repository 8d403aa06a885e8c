package protocol

// Documents of the Provider Registry Protocol (REFERENCE §5), shared by the
// proxy, which serves them, and the origin client (protocol/origin), which
// reads them from public registries. The network mirror's documents are
// convert.MirrorIndexJSON and convert.MirrorVersionJSON, which
// `tofu providers mirror` directories hold too.

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
	Protocols           []string `json:"protocols"`
	OS                  string   `json:"os"`
	Arch                string   `json:"arch"`
	Filename            string   `json:"filename"`
	DownloadURL         string   `json:"download_url"`
	SHASumsURL          string   `json:"shasums_url"`
	SHASumsSignatureURL string   `json:"shasums_signature_url"`
	SHASum              string   `json:"shasum"`
	SigningKeys         struct {
		GPGPublicKeys []GPGPublicKey `json:"gpg_public_keys"`
	} `json:"signing_keys"`
}
