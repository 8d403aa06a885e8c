// Package convert is the home of oci-tofu's converters between outside
// formats and OCI artifacts; the work is done in its subpackages:
//
//   - localfile: bounded, cancellable reads of regular files; atomic writes
//   - sha256sums, pgp: checksum files and their OpenPGP signatures
//   - pkghash: the h1 and zh hashes OpenTofu records for packages
//   - release: provider and OpenTofu release directories → artifacts
//   - modulepkg: module directories and zips → module packages, and back
//   - tfconfig, lockfile: configurations and their dependency lock files
//   - cliconfig: the oci_mirror blocks of a tofu CLI configuration
//   - providerdir: `providers mirror` directories, imported and exported
//   - lint: artifacts checked exactly as OpenTofu reads them
//   - wire: the protocols' documents
package convert
