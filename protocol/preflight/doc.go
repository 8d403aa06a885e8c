// Package preflight owns the start-up checks of a serve configuration:
// every registry (or OCI layout) a mapping names is reachable and accepts
// the credentials, a sample repository per mapping is present, and the
// server's TLS certificate is usable. `oci-tofu serve` prints the results
// when asked to check its configuration, and logs them when it starts.
//
// A check is a Result: what was checked, against which registry with whose
// credentials, a Status and a one-line Detail, and, for a failure, the
// caller's hint. The package names no command-line flag: the caller labels
// each mapping (store.ProviderMapping.Label, Config.ModuleLabel,
// Config.TofuLabel) and says how to ask for a sample
// (Config.UnsampledAdvice).
package preflight
