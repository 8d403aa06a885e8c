package wire

// Module Registry Protocol documents (docs/reference.md §6).

// ModuleVersions is the …/versions document.
type ModuleVersions struct {
	Modules []ModuleVersionList `json:"modules"`
}

// ModuleVersionList is one module's entry of ModuleVersions.
type ModuleVersionList struct {
	Versions []ModuleVersion `json:"versions"`
}

// ModuleVersion is one version of a module.
type ModuleVersion struct {
	Version string `json:"version"`
}

// ModuleLocation is the download endpoint's JSON answer. With
// UseRegistryCredentials set (OpenTofu 1.12 and later read it), the
// client fetches Location itself, with the registry's credentials when
// true, instead of handing it to go-getter; without it, Location is a
// go-getter source address.
type ModuleLocation struct {
	Location               string `json:"location"`
	UseRegistryCredentials *bool  `json:"use_registry_credentials,omitempty"`
}
