// Package proxy is `oci-tofu serve`: an HTTP server that serves provider,
// module and OpenTofu release artifacts kept in OCI repositories through
// the protocols OpenTofu and Terraform speak: service discovery, the
// Provider Network Mirror Protocol (/v1/mirror/), the Provider Registry
// Protocol with the proxy as origin registry (/v1/providers/), the Module
// Registry Protocol (/v1/modules/), the TofuDL mirror API (/tofu/), and
// package downloads streamed from the registry with their digests verified.
//
// This package is the server's shell: options, routing, client
// authentication, probes and lifecycle. It composes the source stacks
// (sources.go: protocol/source and its wrappers) and mounts the handler
// packages that render them (mount.go): providers, modules, tofudl and
// the page, all answering through respond, which hands blobs to deliver.
// docs/architecture.md describes the layers and the rules that keep them.
package proxy
