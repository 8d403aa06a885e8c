// Package show is `oci-tofu show`: a module package's interface, named
// by its repository (REPOSITORY[:TAG|@DIGEST], convert/moduledoc), or an
// address's page of the catalogue (ADDRESS[@VERSION] with a repository
// template): a provider's or a module's versions and their status under
// the policy, and of the version shown its platforms, protocols,
// packages and their hashes, publisher keys, SBOMs and known
// vulnerabilities, or its interface. The documents are the catalogue's
// (protocol/proxy/catalog), built by a server that does not listen, with
// the same source stack, policy and vulnerability database serve judges
// with: what the command prints is what the catalogue's JSON page says.
package show
