// Package proxy is `oci-tofu serve`: an HTTP handler that serves provider,
// module and OpenTofu release artifacts kept in OCI repositories through
// the protocols OpenTofu and Terraform speak: service discovery, the
// Provider Network Mirror Protocol (/v1/mirror/), the Provider Registry
// Protocol with the proxy as origin registry (/v1/providers/), the Module
// Registry Protocol (/v1/modules/), the TofuDL mirror API (/tofu/), and
// package downloads streamed from the registry with their digests verified.
//
// Every read of the registry goes through one seam, package store; the
// handlers here only translate requests and documents. Documents are
// cached briefly and revalidated in the background, so no client waits
// for a revalidation.
package proxy
