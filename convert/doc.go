// Package convert is the home of oci-tofu's converters between outside
// formats and OCI artifacts; the work is done in its subpackages:
//
//   - attest: signatures and attestations of pushed artifacts, written
//     and checked in cosign's forms (tag schema and Sigstore bundles),
//     and the admission of a release by them; attest/notation checks
//     Notary Project signatures against a trust policy
//   - cliconfig: the oci_mirror blocks of a tofu CLI configuration
//   - keyless: Sigstore keyless attestations (Fulcio certificates, Rekor
//     entries, timestamps) verified offline against a trusted root
//   - lint: artifacts checked exactly as OpenTofu reads them
//   - localfile: bounded, cancellable reads of regular files; atomic writes
//   - lockfile: dependency lock files, read and written as tofu does, and
//     locked from registry metadata
//   - moduledoc: a module package's interface, read as OpenTofu reads it
//   - modulepkg: module directories and zips → module packages, and back
//   - pgp: OpenPGP signatures of checksum files, judged as OpenTofu does
//   - pkghash: the h1 and zh hashes OpenTofu records for packages
//   - policy: the policy file, its bounds and its decisions
//   - providerdir: `providers mirror` directories, imported and exported
//   - publish: the one path every verb and pull-through store a verified
//     release by: attested before its tags, with its SBOMs
//   - release: provider and OpenTofu release directories → artifacts
//   - sbom: SBOMs of provider packages (SPDX 2.3 JSON) from the Go build
//     information of their executables
//   - sha256sums: SHA256SUMS files, read and written as OpenTofu reads them
//   - tfconfig: configurations read as the clients read them: the
//     providers they require and their version constraints
//   - vulns: Go binaries' modules matched against an offline OSV
//     vulnerability database in the Go database's layout
//   - wire: the protocols' documents
package convert
