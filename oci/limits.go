package oci

// Limits on what oci-tofu reads and writes, shared by push, pull, verify,
// lock, mirror and the proxy. Each is named after what it bounds; see
// docs/security.md.
const (
	// MaxManifestSize is OpenTofu's limit on manifests and indexes; we
	// refuse to read or write anything larger.
	MaxManifestSize = 4 << 20
	// MaxSmallFile bounds SHA256SUMS, signatures, release manifests,
	// provenance files and key files.
	MaxSmallFile = 1 << 20
	// MaxDocument bounds a protocol document (JSON) read from an origin
	// registry or a mirror directory.
	MaxDocument = 4 << 20
	// MaxLockFile bounds a .terraform.lock.hcl or a CLI configuration.
	MaxLockFile = 16 << 20
	// MaxPackageSize bounds one provider zip, module zip or OpenTofu
	// release file, downloaded or pushed.
	MaxPackageSize = 2 << 30
	// MaxUnpackedSize bounds what one package may unpack to (zip bombs).
	MaxUnpackedSize = 8 << 30
	// MaxPackageFiles bounds the entries of one package.
	MaxPackageFiles = 100_000
	// MaxVersions bounds how many version tags one repository may list.
	MaxVersions = 10_000
)
