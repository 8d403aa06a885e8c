// Package catalog serves the catalogue: pages for people, and the same
// documents as JSON, of every module and provider the mapped
// repositories hold and the OpenTofu releases (not only what was
// served), ranked search and filters, each version's status under the
// policy, and a
// module version's interface (inputs, outputs, dependencies, resources,
// submodules, examples, README) as it was stored beside the package when
// it was pushed, mirrored or pulled through (convert/moduledoc), or
// extracted on its first view when another tool pushed it.
//
// Everything is scoped: a client that reads only some addresses
// (respond.ReaderOf) sees, counts and finds only those; the documents are
// built per request from caches keyed by content (what the registry
// holds, the interface of a manifest digest), never from another
// caller's answer. Nothing is pulled through: the catalogue shows what
// the registry holds (docs/catalogue.md).
package catalog
