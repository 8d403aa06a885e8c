package modulepkg

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"runtime"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"
)

// moduleZipFormat names the packing rules and the compressor; it is part
// of every tree digest, so a packer that would produce other bytes for the
// same tree never trusts an earlier packer's result.
var moduleZipFormat = "oci-tofu module zip v1, " + runtime.Version()

// HashTree computes the content digest of what Pack would pack
// from dir (same files, exclusions and checks) without compressing
// anything: sha256 over the packer format and, per file in order, its
// content's sha256, its mode and its name. Equal tree digests mean
// byte-identical zips, so a re-push can find its earlier result by tree
// digest (Cache) and skip packing.
//
// With opts.Cache, files whose size, times, inode and mode are those
// recorded when they were last hashed are not read again (as git's index
// does; the change time cannot be set back, so an edit is always seen).
func HashTree(ctx context.Context, dir string, opts Options) (digest.Digest, []string, error) {
	root, files, names, err := moduleFiles(ctx, dir, opts.AllowNoRoot)
	if err != nil {
		return "", nil, err
	}
	workers := opts.Concurrency
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	sums := make([][sha256.Size]byte, len(files))
	known := opts.Cache.loadStamps(root)
	fresh := known == nil
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, f := range files {
		if known.lookup(f, &sums[i]) {
			continue
		}
		fresh = true
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			r, err := localfile.OpenRegular(f.path)
			if err != nil {
				return err
			}
			defer r.Close()
			h := sha256.New()
			if _, err := io.Copy(h, localfile.Reader(gctx, r)); err != nil {
				return fmt.Errorf("reading %s: %w", f.name, err)
			}
			h.Sum(sums[i][:0])
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return "", nil, err
	}
	if fresh {
		opts.Cache.storeStamps(root, files, sums)
	}
	return treeDigest(files, sums), names, nil
}

func treeDigest(files []moduleFile, sums [][sha256.Size]byte) digest.Digest {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", moduleZipFormat)
	for i, f := range files {
		mode := "644"
		if f.exec {
			mode = "755"
		}
		fmt.Fprintf(h, "%x %s %s\n", sums[i], mode, f.name)
	}
	return digest.NewDigest(digest.SHA256, h)
}
