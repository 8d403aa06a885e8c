// Package protocol serves provider artifacts kept in OCI repositories
// through the protocols OpenTofu and Terraform speak: service discovery
// (/.well-known/terraform.json), the Provider Network Mirror Protocol
// (/v1/mirror/), the Provider Registry Protocol with the proxy as origin
// registry (/v1/providers/), and archive downloads streamed from the
// registry with their digests verified (/v1/archives/).
//
// The server is stateless apart from in-memory caches: tag lists and
// tag→digest resolutions for a short TTL, manifests and provenance by
// digest until evicted. Concurrent identical upstream requests are
// collapsed into one. It reads the registry through package oci only.
package protocol
