// Package attach reads and writes what is attached to an artifact in an
// OCI repository: OCI 1.1 referrers (through the registry's referrers
// API, the referrers tag schema, or an OCI layout's index.json), cosign's
// tag-schema signatures and attestations (sha256-<hex>.sig, .att), and
// the links a manifest has to its children and subject, which deleting a
// version follows (docs/artifacts.md, "Referrers" and "Signatures and
// attestations").
//
// It sits beside package oci, which holds the artifacts themselves; like
// oci, it is the only place its registry operations touch oras-go.
package attach
