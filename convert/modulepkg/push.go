package modulepkg

import (
	"context"
	"fmt"
	"os"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Target is where a module package is pushed: a repository (no tag) and
// the tags written to it, last, after all content; the first tag is the
// one the package is known by.
type Target struct {
	Client *oci.Client
	Ref    oci.Reference
	Tags   []string
}

// How says how a Package was made ready.
type How string

// The ways a Package is made ready.
const (
	// Packed: a directory, packed reproducibly.
	Packed How = "packed"
	// Checked: a zip, checked as an unpacker reads it, pushed byte for byte.
	Checked How = "checked"
	// Unchanged: a directory packed before (Options.Cache) to the zip
	// whose module every tag already holds: nothing to pack or push.
	Unchanged How = "unchanged"
)

// Package is a module package ready to be pushed to a Target.
type Package struct {
	// Source is the directory or zip given.
	Source string
	How    How
	// Digest and Size are the zip's, Files its number of files.
	Digest digest.Digest
	Size   int64
	Files  int
	// Tree is the directory's content digest (HashTree); empty for a zip.
	Tree digest.Digest

	zip  *Zip               // nil when Unchanged
	root ocispec.Descriptor // the module's manifest, when Unchanged
}

// Prepare makes source ready to push to target: a zip is checked; a
// directory is packed, unless opts.Cache knows its tree packed to a zip
// whose module every target tag already holds. Failures to read the
// registry only mean that shortcut is not taken. A target the client's
// held-address index cannot record is refused first
// (oci.Client.CheckHeldIndex). Remove the Package when done with it.
func Prepare(ctx context.Context, source string, target Target, opts Options) (*Package, error) {
	if err := target.Client.CheckHeldIndex(target.Ref); err != nil {
		return nil, err
	}
	fi, err := os.Stat(source)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		z, err := OpenZipContext(ctx, source, opts.AllowNoRoot)
		if err != nil {
			return nil, err
		}
		return packageOf(source, Checked, z), nil
	}
	if opts.Cache != nil {
		if p, err := unchanged(ctx, source, target, opts); p != nil || err != nil {
			return p, err
		}
	}
	z, err := Pack(ctx, source, opts)
	if err != nil {
		return nil, err
	}
	return packageOf(source, Packed, z), nil
}

func packageOf(source string, how How, z *Zip) *Package {
	return &Package{Source: source, How: how, Digest: z.Digest, Size: z.Size, Files: len(z.Files), Tree: z.Tree, zip: z}
}

// unchanged is the Unchanged package of dir when its tree is in the cache
// and every target tag holds the module built from the zip recorded for
// it; nil when a pack is needed.
func unchanged(ctx context.Context, dir string, target Target, opts Options) (*Package, error) {
	tree, files, err := HashTree(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	zd, size, ok := opts.Cache.Lookup(tree)
	if !ok {
		return nil, nil
	}
	root, held := heldByAllTags(ctx, target, oci.ModuleLayerDescriptor(zd, size))
	if !held {
		return nil, nil
	}
	return &Package{Source: dir, How: Unchanged, Digest: zd, Size: size, Files: len(files), Tree: tree, root: root}, nil
}

// heldByAllTags reports whether every target tag holds the module built
// from zip, and that module's manifest. Registry errors report false.
func heldByAllTags(ctx context.Context, target Target, zip ocispec.Descriptor) (ocispec.Descriptor, bool) {
	repo, err := target.Client.OpenReadOnly(ctx, target.Ref)
	if err != nil {
		return ocispec.Descriptor{}, false
	}
	root, err := oci.ModuleRoot(zip)
	if err != nil {
		return ocispec.Descriptor{}, false
	}
	held, err := oci.CurrentTags(ctx, repo, target.Tags)
	if err != nil || !held.AllHold(root.Digest) {
		return ocispec.Descriptor{}, false
	}
	return root, true
}

// Push uploads the package and writes the target's tags last; an
// Unchanged package is up to date without a request but the one that
// records it in the client's held-address index, as a push does
// (oci.Client.RecordHeld).
func (p *Package) Push(ctx context.Context, target Target, opts oci.PushOptions) (oci.PushResult, error) {
	if p.How == Unchanged {
		target.Client.RecordHeld(ctx, target.Ref)
		return oci.PushResult{Root: p.root, UpToDate: true}, nil
	}
	art, err := oci.BuildModule(p.zip.Blob())
	if err != nil {
		return oci.PushResult{}, err
	}
	repo, err := target.Client.Open(target.Ref)
	if err != nil {
		return oci.PushResult{}, err
	}
	held, err := oci.CurrentTags(ctx, repo, target.Tags)
	if err != nil {
		return oci.PushResult{}, fmt.Errorf("reading the tags of %s: %w", target.Ref.Name(), err)
	}
	res, err := oci.Push(ctx, repo, art, held, opts)
	if err != nil {
		return oci.PushResult{}, fmt.Errorf("pushing to %s: %w (no tag was written)", target.Ref.Name(), err)
	}
	return res, nil
}

// ZipPath is the package's zip on disk: the zip given, or the one
// Prepare packed; "" when Unchanged (nothing was packed).
func (p *Package) ZipPath() string {
	if p.zip == nil {
		return ""
	}
	return p.zip.Path
}

// Remove deletes the zip Prepare packed; a zip given by the user is left
// alone.
func (p *Package) Remove() error {
	if p == nil {
		return nil
	}
	return p.zip.Remove()
}
