package source

import (
	"context"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Need says what a reader of provider releases reads besides the index.
type Need int

const (
	// NeedSummary: protocols, platforms and signing keys (the registry
	// protocol's versions document).
	NeedSummary Need = 1 << iota
	// NeedPackages: every platform's package, with its hashes and size.
	NeedPackages
	// NeedChecksums: the publisher's SHA256SUMS, signature and keys.
	NeedChecksums
)

// ProviderListing is what a source lists of a provider.
type ProviderListing struct {
	Listing
	// Unresolvable maps a listed version whose only tag is not the one
	// OpenTofu resolves to that tag.
	Unresolvable map[string]string
	// Refused maps tags that look like versions but are none to why.
	Refused map[string]string
	// Warnings are the listing's words on what it could not list.
	Warnings []string
	// Releases, when the listing was asked with a Need, are the
	// releases of its versions, by version, and Left why each of the
	// others is left out (a *Denied, or a store failure that skips it).
	Releases map[string]*ProviderRelease
	Left     map[string]error
	// Deprecated are the versions listed that the policy deprecates,
	// by version, with its message: they are served, and clients are
	// warned (nil: none).
	Deprecated map[string]string
	// Vulnerable are the versions listed that the policy serves with a
	// warning of their known vulnerabilities (a vulnerabilities block
	// with action = "warn"), by version, with the warning (nil: none).
	Vulnerable map[string]string
}

// ProviderRoot is a provider release resolved: the stored index (Root),
// or an origin's release pull-through would store (Pulled).
type ProviderRoot struct {
	Provider names.Provider
	Version  names.Version
	// Root is a stored release's root, its index with it.
	Root *Root
	// Pulled is the origin release, for one the registry does not hold.
	Pulled *PulledProvider
}

// PulledProvider is an origin's release as pull-through offers it.
type PulledProvider struct {
	// Served is the address pull URLs name, Origin the origin's, Via
	// the pull URLs' protocol, and Sums the digest of the origin's
	// SHA256SUMS they pin (once the release is read).
	Served names.Provider
	Origin names.Provider
	Via    names.Via
	Sums   digest.Digest
	// Offer, when the release was only listed: its protocols and
	// platforms; Release once read.
	Offer   *wire.RegistryVersion
	Release OriginRelease
}

// OriginRelease is an origin's release as pull-through read and
// verified it, kept with the root for the source that read it to start
// a package's download from.
type OriginRelease interface {
	// SumsDigest is the digest of the origin's SHA256SUMS.
	SumsDigest() digest.Digest
	// ZipName is the file name of pl's package.
	ZipName(pl names.Platform) string
}

// ProviderRelease is what a source read of a release.
type ProviderRelease struct {
	*ProviderRoot
	// Protocols are its plugin protocol versions (nil: not known).
	Protocols []string
	// Platforms are its platforms, and with NeedPackages their packages.
	Platforms []names.Platform
	Packages  map[names.Platform]*ProviderPackage
	// SigningKeyIDs are the publisher keys its push verified.
	SigningKeyIDs []string
	// Summarized: its provenance or index said the above.
	Summarized bool
	// Checksums are the publisher's, with NeedChecksums; nil when it
	// carries none.
	Checksums *Checksums
	// ChecksumsErr is why the provenance cannot be read: what needs it
	// (h1 hashes, the publisher's checksums) is not served.
	ChecksumsErr error
	// Refused are the platforms the policy leaves out, with why.
	Refused map[names.Platform]error
	// Others are, in a merged listing, the same version's releases in
	// later mappings, which may add platforms.
	Others []*ProviderRelease
	// FromIndex: Protocols, Platforms and SigningKeyIDs are the version
	// index's (ListOptions.Hinted), and Root.Index holds no platform
	// manifests: what is served of the version is resolved afresh.
	FromIndex bool
}

// ProviderPackage is one platform's package.
type ProviderPackage struct {
	Filename string
	// Layer is a stored package's zip layer; SHA256 an origin's
	// package's digest (hex).
	Layer  ocispec.Descriptor
	SHA256 string
	// Keys are the keys of an origin's package's SHA256SUMS signature.
	Keys []wire.GPGPublicKey
	// Release is the release it belongs to (with several mappings, not
	// always the one asked for): what its URL pins, its checksums.
	Release *ProviderRelease
	// Hashes are its lock-file hashes: a trusted h1, if any, and zh.
	Hashes []string
}

// Checksums are a release's SHA256SUMS, its signature and the keys.
type Checksums struct {
	Data, Signature []byte
	Keys            []wire.GPGPublicKey
	// Filenames maps platforms to the file names SHA256SUMS lists.
	Filenames map[names.Platform]string
}

// ListOptions say what a lister reads of the versions listed: with a
// Need, each version Want wants (all without Want) is read too
// (ProviderListing.Releases), and a source may start reading them while
// it still lists.
type ListOptions struct {
	Need Need
	Want func(names.Version) bool
	// Hinted, with Need NeedSummary alone: the lister may take a
	// version's summary and platforms from the repository's version index
	// (ProviderRelease.FromIndex) instead of reading the version's own
	// index, where the index agrees with the tags. For a listing's
	// document only: nothing served of a version comes from it.
	Hinted bool
}

// File is SHA256SUMS (FileSHA256SUMS) or its signature (FileSignature),
// named name, as a blob held in memory.
func (c *Checksums) File(kind ProviderFileKind, name string) *Blob {
	if kind == FileSignature {
		return &Blob{Name: name, ContentType: "application/octet-stream", Pinned: true, Data: c.Signature}
	}
	return &Blob{Name: name, ContentType: "text/plain; charset=utf-8", Pinned: true, Data: c.Data}
}

// Providers is a source of provider releases.
type Providers interface {
	// ProviderVersions lists p's versions.
	ProviderVersions(ctx context.Context, p names.Provider, via names.Via, opts ListOptions) (ProviderListing, error)
	// ResolveProvider is release v of p: NotFound marked ErrNotHeld when
	// neither held nor offered.
	ResolveProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*ProviderRoot, error)
	// ResolveProviderAt is the stored release of p at version v with
	// index digest index: what an archive URL names.
	ResolveProviderAt(ctx context.Context, p names.Provider, v names.Version, index digest.Digest) (*ProviderRoot, error)
	// ReadProvider reads what need names of a resolved release.
	ReadProvider(ctx context.Context, r *ProviderRoot, need Need) (*ProviderRelease, error)
	// OpenProviderPackage is a stored release's package for platform pl.
	OpenProviderPackage(ctx context.Context, r *ProviderRoot, pl names.Platform) (*Blob, error)
}

// ProviderFileKind is which file of a provider release a URL names.
type ProviderFileKind int

const (
	FilePackage ProviderFileKind = iota
	FileSHA256SUMS
	FileSignature
)

// PulledFile is what a pull URL names: a file of an origin's release,
// pinned by the digest of its SHA256SUMS, as pull-through hands it out
// through Via (through the registry protocol, RegistryHost is the
// proxy's own host name).
type PulledFile struct {
	Via          names.Via
	RegistryHost string
	Provider     names.Provider
	Version      names.Version
	Sums         digest.Digest
	File         ProviderFileKind
	Platform     names.Platform
}

// PulledFiles is a source that opens the files pull URLs name (the
// pulled source, and the gate over it).
type PulledFiles interface {
	OpenPulledFile(ctx context.Context, f PulledFile) (*Blob, error)
}

// Warmer is a source that starts what is slow of a package a client is
// about to download (pull-through's download from its origin).
type Warmer interface {
	WarmProvider(ctx context.Context, r *ProviderRoot, pl names.Platform)
}

// HeldProviders is a source of provider releases that may pull through,
// asked for what it holds alone: ResolveHeldProvider is ResolveProvider
// with nothing offered by an origin and nothing started (NotFound marked
// ErrNotHeld when not held). Several mappings ask each of theirs what it
// holds before the one that pulls through fetches.
type HeldProviders interface {
	ResolveHeldProvider(ctx context.Context, p names.Provider, v names.Version, via names.Via) (*ProviderRoot, error)
}

// ResolveHeldProvider is src's ResolveHeldProvider when it answers one,
// its ResolveProvider otherwise (a source that never pulls through).
func ResolveHeldProvider(ctx context.Context, src Providers, p names.Provider, v names.Version, via names.Via) (*ProviderRoot, error) {
	if h, ok := src.(HeldProviders); ok {
		return h.ResolveHeldProvider(ctx, p, v, via)
	}
	return src.ResolveProvider(ctx, p, v, via)
}
