package source

import (
	"context"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// ModuleAddress is a module as the proxy serves it: the registry
// hostname clients address it under (the proxy's own, or an origin
// registry's on its per-origin paths) and the module.
type ModuleAddress struct {
	Host   string
	Module names.Module
}

// String is the address as the policy file matches it:
// HOST/NAMESPACE/NAME/SYSTEM.
func (a ModuleAddress) String() string { return a.Host + "/" + a.Module.String() }

// What names the module for clients and logs: "module NAMESPACE/NAME/SYSTEM".
func (a ModuleAddress) What() string { return "module " + a.Module.String() }

// ModuleListing is what a source lists of a module: its versions, and
// those the policy file left out before anything was read of them (a
// versions document that ends up empty says how many were denied).
type ModuleListing struct {
	Listing
	Denied []names.Version
	// Deprecated are the versions listed that the policy deprecates, by
	// version, with its message (nil: none). No client shows it (the
	// Module Registry Protocol has no field for it): the page does.
	Deprecated map[string]string
}

// ModuleRelease is a version of a module a source can answer for.
type ModuleRelease struct {
	Version names.Version
	// Root is the stored package's manifest (what attestations are about
	// and archive URLs pin) and its repository; nil for a version
	// pull-through stored lately that the registry does not answer for
	// yet.
	Root *Root
}

// Modules is a source of module packages (the Module Registry Protocol).
type Modules interface {
	// ModuleVersions lists the versions of a held (Stored) or offered by
	// an origin.
	ModuleVersions(ctx context.Context, a ModuleAddress) (ModuleListing, error)
	// ModuleRelease is version v as stored, nothing fetched: NotFound
	// marked ErrNotHeld when it is not held, Denied when it may not be
	// served.
	ModuleRelease(ctx context.Context, a ModuleAddress, v names.Version) (*ModuleRelease, error)
	// FetchModule is version v for a download: as stored, or, where a
	// source pulls through and nothing holds it, pulled from its origin
	// and stored first. Root is set.
	FetchModule(ctx context.Context, a ModuleAddress, v names.Version) (*ModuleRelease, error)
	// OpenModule is the package (zip) of version v whose manifest has
	// digest manifest, as an archive URL pins it.
	OpenModule(ctx context.Context, a ModuleAddress, v names.Version, manifest digest.Digest) (*Blob, error)
}

// ModulePackages is what a source of modules may answer besides, for the
// log only, never to serve: the package (zip) version v's tag names in
// the registry, nothing judged. Several mappings compare their copies of
// a version with it, and log the copies the first shadows.
type ModulePackages interface {
	ModulePackage(ctx context.Context, a ModuleAddress, v names.Version) (*store.Repo, ocispec.Descriptor, error)
}

// ModulePackageOf is src's ModulePackage, when src answers it (NotFound
// otherwise).
func ModulePackageOf(ctx context.Context, src Modules, a ModuleAddress, v names.Version) (*store.Repo, ocispec.Descriptor, error) {
	p, ok := src.(ModulePackages)
	if !ok {
		return nil, ocispec.Descriptor{}, NotFoundf("module %s %s: its source does not say which package it holds", a.Module, v)
	}
	return p.ModulePackage(ctx, a, v)
}
