// Package modulepkg makes and reads OpenTofu module packages: zips whose
// root is the module package root (docs/reference.md §2). It walks a module
// directory (exclusions, .terraformignore, symbolic links), packs it
// reproducibly (entries sorted, every timestamp 1980-01-01 00:00,
// permissions 0644 or 0755, no directory entries, no extra fields: the same
// tree always gives the same bytes and hence the same OCI digest), hashes a
// tree without packing it, remembers what trees packed to, checks existing
// zips as an unpacker must, and unpacks them safely. Prepare and
// Package.Push push a directory or zip to a repository's tags, skipping an
// unchanged tree whose earlier pack the tags already hold.
package modulepkg

import "github.com/oci-tofu/oci-tofu/oci"

// Limits on module packages, packed or unpacked: the same for push, pull
// and verify, so nothing is pushed that pulling would refuse.
const (
	// MaxFiles bounds the number of files in a module package.
	MaxFiles = oci.MaxPackageFiles
	// MaxSize bounds a module package's size, packed (the zip) and
	// unpacked (the sum of its files), when packing, checking, pulling and
	// unpacking.
	MaxSize = oci.MaxModuleSize
)
