// Package repotemplate maps provider and module addresses to the
// repositories that hold them, with the syntax of OpenTofu's oci_mirror
// repository_template ("${namespace}", "${type}", …): parsing refuses a
// template that could not name a repository, and an expansion is an
// oci.Reference without tag (docs/artifacts.md).
package repotemplate
