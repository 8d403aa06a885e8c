// Package providerdocs reads a provider release's documentation, the
// tree a provider publishes to a registry (docs/index.md,
// docs/resources/*.md, docs/data-sources/*.md, docs/ephemeral-resources,
// docs/functions, docs/guides, docs/list-resources; or the legacy
// website/docs with r/ and d/ and *.html.markdown), and stores it with
// the release: an OCI 1.1 referrer of the provider version's index
// (docs/artifacts.md, "Provider documentation"). The index, its
// platform manifests and its tags are not touched: OpenTofu installs
// what it installed before.
//
// Reading is bounded (the constants below) and confined to the
// directory: a symbolic link leading out of it, a name that is not a
// page name, or a page that is not UTF-8 refuses the whole tree, naming
// the file; files and directories outside the layout are skipped and
// listed. Reading a stored tree back is bounded the same way.
package providerdocs

// Limits of one documentation tree.
const (
	// MaxPages bounds the pages of one tree.
	MaxPages = 4096
	// MaxPageSize bounds one page's file.
	MaxPageSize = 1 << 20
	// MaxTotalSize bounds the pages' bytes in all.
	MaxTotalSize = 32 << 20
	// MaxStoredSize bounds the stored (compressed) document, written and
	// read: under attach.MaxReferrerBytes with its manifest.
	MaxStoredSize = 7 << 20
	// MaxFrontMatter bounds a page's front matter.
	MaxFrontMatter = 16 << 10
	// MaxNameLength bounds a page's file name.
	MaxNameLength = 128
	// maxEntries bounds the directory entries listed, skipped ones too.
	maxEntries = 4 * MaxPages
)
