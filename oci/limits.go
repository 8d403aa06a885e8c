package oci

// Limits on what oci-tofu reads and writes: one set, shared by push, pull,
// verify, lock, mirror and the proxy, so that nothing is pushed that a
// pull, a verify or the proxy would refuse. Each is named after what it
// bounds; docs/security.md lists them with where each is enforced.
const (
	// MaxManifestSize is OpenTofu's limit on manifests and indexes; we
	// refuse to read or write anything larger.
	MaxManifestSize = 4 << 20
	// MaxIndexEntries bounds the descriptors of one provider index
	// (platform manifests and provenance). Real releases have a few dozen;
	// the bound keeps one hostile index from fanning out into thousands
	// of reads. Push, verify and the proxy refuse larger indexes.
	MaxIndexEntries = 256
	// MaxSmallFile bounds SHA256SUMS, signatures, release manifests,
	// provenance files and key files.
	MaxSmallFile = 1 << 20
	// MaxDocument bounds a protocol document (JSON) read from an origin
	// registry or a mirror directory.
	MaxDocument = 4 << 20
	// MaxLockFile bounds a .terraform.lock.hcl or a CLI configuration.
	MaxLockFile = 16 << 20
	// MaxPackageSize bounds one provider zip or OpenTofu release file,
	// pushed, pulled, verified or served.
	MaxPackageSize = 2 << 30
	// MaxUnpackedSize bounds what one provider package may unpack to (zip
	// bombs).
	MaxUnpackedSize = 8 << 30
	// MaxModuleSize bounds a module package, packed (the zip) and unpacked
	// (the sum of its files): push refuses what pull would.
	MaxModuleSize = 1 << 30
	// MaxPackageFiles bounds the entries of one package.
	MaxPackageFiles = 100_000
	// MaxVersions bounds how many version tags one repository may list.
	MaxVersions = 10_000
	// MaxTags bounds how many tags, versions or not, one repository may
	// list; MaxTagPages the pages a registry may split them into. A
	// version on a registry without the referrers API carries up to
	// 2 + 2 × platforms tags of the tag schemas (an SBOM and its
	// attestation per platform), which a listing reads only where the
	// registry's list is out of lexical order (ListTagsBefore).
	MaxTags     = 10 * MaxVersions
	MaxTagPages = 1000
)
