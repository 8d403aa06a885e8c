package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/errdef"
)

// PushOptions tune Push.
type PushOptions struct {
	// Concurrency bounds parallel blob uploads (default 4).
	Concurrency int
	// Progress, when set, is called as bytes are uploaded (from several
	// goroutines; it must be safe for concurrent use).
	Progress func(done, total int64)
}

// PushResult says what a push did.
type PushResult struct {
	Root ocispec.Descriptor
	// UpToDate is set when every tag already pointed at Root: nothing was written.
	UpToDate bool
	// Uploaded and Skipped count blobs and manifests sent or found present.
	Uploaded, Skipped int
	UploadedBytes     int64
}

// Push writes an artifact atomically: every blob (in parallel, skipping
// those the repository has), then manifests children first, and the tags
// last, so an interrupted push leaves no tag pointing at missing content.
func Push(ctx context.Context, repo Repository, a *Artifact, tags []string, opts PushOptions) (PushResult, error) {
	root := a.Root()
	res := PushResult{Root: root}
	if allTagged(ctx, repo, root, tags) {
		res.UpToDate = true
		return res, nil
	}
	blobs, err := PushBlobs(ctx, repo, a.Blobs, opts)
	res.Uploaded, res.Skipped, res.UploadedBytes = blobs.Uploaded, blobs.Skipped, blobs.UploadedBytes
	if err != nil {
		return res, err
	}
	for _, m := range a.Manifests {
		ok, err := repo.Exists(ctx, m.Descriptor)
		if err != nil {
			return res, fmt.Errorf("checking manifest %s: %w", m.Descriptor.Digest, err)
		}
		if ok {
			res.Skipped++
			continue
		}
		if err := pushIgnoringExisting(ctx, repo, m.Descriptor, bytes.NewReader(m.Bytes)); err != nil {
			return res, fmt.Errorf("uploading manifest %s: %w", m.Descriptor.Digest, err)
		}
		res.Uploaded++
	}
	for _, tag := range tags {
		if err := repo.Tag(ctx, root, tag); err != nil {
			return res, fmt.Errorf("tagging %s: %w", tag, err)
		}
	}
	return res, nil
}

// PushBlobs uploads blobs in parallel, skipping those the repository
// already has. Push calls it; callers may also call it early, for example
// to upload large files while other work goes on.
func PushBlobs(ctx context.Context, repo Repository, blobs []Blob, opts PushOptions) (PushResult, error) {
	var res PushResult
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	var total, done int64
	for _, b := range blobs {
		total += b.Descriptor.Size
	}
	var uploaded, skipped atomic.Int64
	var uploadedBytes atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	seen := map[string]bool{}
	for _, b := range blobs {
		if seen[b.Descriptor.Digest.String()] {
			continue
		}
		seen[b.Descriptor.Digest.String()] = true
		g.Go(func() error {
			ok, err := repo.Exists(gctx, b.Descriptor)
			if err != nil {
				return fmt.Errorf("checking blob %s: %w", b.Descriptor.Digest, err)
			}
			if ok {
				skipped.Add(1)
				if opts.Progress != nil {
					opts.Progress(atomic.AddInt64(&done, b.Descriptor.Size), total)
				}
				return nil
			}
			r, err := b.Open()
			if err != nil {
				return err
			}
			defer r.Close()
			var body io.Reader = r
			if opts.Progress != nil {
				body = &progressReader{r: r, add: func(n int64) { opts.Progress(atomic.AddInt64(&done, n), total) }}
			}
			if err := pushIgnoringExisting(gctx, repo, b.Descriptor, body); err != nil {
				return fmt.Errorf("uploading blob %s: %w", describe(b.Descriptor), err)
			}
			uploaded.Add(1)
			uploadedBytes.Add(b.Descriptor.Size)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	res.Uploaded, res.Skipped, res.UploadedBytes = int(uploaded.Load()), int(skipped.Load()), uploadedBytes.Load()
	return res, nil
}

func allTagged(ctx context.Context, repo Repository, root ocispec.Descriptor, tags []string) bool {
	if len(tags) == 0 {
		return false
	}
	for _, tag := range tags {
		d, err := repo.Resolve(ctx, tag)
		if err != nil || d.Digest != root.Digest {
			return false
		}
	}
	return true
}

func pushIgnoringExisting(ctx context.Context, repo Repository, desc ocispec.Descriptor, r io.Reader) error {
	err := repo.Push(ctx, desc, r)
	if errors.Is(err, errdef.ErrAlreadyExists) {
		return nil
	}
	return err
}

func describe(d ocispec.Descriptor) string {
	if t := d.Annotations[AnnotationTitle]; t != "" {
		return t + " (" + d.Digest.String() + ")"
	}
	return d.Digest.String()
}

type progressReader struct {
	r   io.Reader
	add func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.add(int64(n))
	}
	return n, err
}
