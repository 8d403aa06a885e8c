// Package oci is the OpenTofu artifact model on OCI: media types, building
// and reading provider indexes and module manifests, mapping versions to tags,
// repository templates, and opening registry or OCI-layout targets.
//
// It is the only package that talks to oras-go; everything above it
// (convert, protocol, cmd) sees Repository and the artifact types here.
package oci
