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
