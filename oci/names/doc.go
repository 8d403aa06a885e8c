// Package names is oci-tofu's vocabulary: the names OpenTofu and Terraform
// give to things, and the rules they follow. Provider and module addresses,
// platforms, versions and the OCI tags that stand for them, version
// constraints and how a version is chosen, and the file names of provider
// releases.
//
// Every parser here meets outside input (request paths, tags, file names,
// configuration, lock files) and returns an error for anything it cannot
// read; none panics, whatever the input.
package names
