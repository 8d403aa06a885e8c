// Package oci is the OpenTofu artifact model on OCI: media types, building
// and reading provider indexes and module manifests, mapping versions to tags,
// repository templates, and opening registry or OCI-layout targets.
//
// It and oci/attach (referrers and signatures) are the only packages that
// talk to oras-go; everything above (convert, protocol, cmd) sees
// Repository and the artifact types here.
package oci
