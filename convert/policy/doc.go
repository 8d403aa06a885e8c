// Package policy owns the policy file: its HCL syntax (a
// default, then provider, module and tofu blocks each naming what it
// matches and which versions and platforms it allows), its bounds
// (size, nesting, number of rules) and the decisions read from it,
// each naming the rule that decided and why. It reads no registry and
// knows no flag: the proxy asks it before it reads a release, and
// `oci-tofu policy test` asks it offline. docs/policy.md describes the
// file for operators.
package policy
