package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// pull is one origin release being fetched into the registry: every file
// downloaded once (growingFile) into a temporary release directory, the
// files clients ask for first and at once, the others in the background
// once no client-requested download is running any more, at most
// Concurrency at a time; then the directory is pushed (finish) and the
// version tagged. It runs detached from the requests that started it.
type pull struct {
	pt   *pullThrough
	kind string // "provider" or "tofu", for logs and metrics
	key  string
	// failKey names the release in the failure memory (origin and version).
	failKey string
	what    string
	// provider or tofu is the verified origin release being pulled.
	provider *ingest.ProviderRelease
	tofu     *ingest.TofuOriginRelease // "registry.opentofu.org/hashicorp/aws 5.0.0", for logs
	dir      string
	repo     oci.Repository
	files    []string // every file to download
	// open starts a file's download; want is its expected sha256 ("" for
	// files nothing lists, which are not uploaded early).
	open      func(ctx context.Context, name string) (*origin.Body, error)
	want      func(name string) string
	mediaType func(name string) string
	// finish pushes the complete directory and says what it pushed.
	finish func(ctx context.Context, dir string) (pulled, error)

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	started  map[string]*growingFile
	demanded int           // client-requested downloads running
	settled  chan struct{} // closed and replaced when demanded drops to 0
	finished bool
	uploads  sync.WaitGroup
}

// pulled is what a finished pull stored: the root's descriptor and, by
// file name, each file's blob.
type pulled struct {
	root  ocispec.Descriptor
	files map[string]ocispec.Descriptor
}

// errPullFinished means the pull has ended: what it stored is read from
// the registry now.
var errPullFinished = errors.New("pull-through of this release has finished")

// fetch returns the growing file for name, starting its download at once
// if it has not started (a client waits for it).
func (p *pull) fetch(name string) (*growingFile, error) {
	return p.startFile(name, true)
}

func (p *pull) startFile(name string, demanded bool) (*growingFile, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return nil, errPullFinished
	}
	if g, ok := p.started[name]; ok {
		return g, nil
	}
	g, err := newGrowingFile(name, filepath.Join(p.dir, name), p.want(name), p.pt.opts.MaxFileSize)
	if err != nil {
		return nil, err
	}
	g.counted = p.pt.metrics.originBytes.Add
	p.started[name] = g
	if demanded {
		p.demanded++
	}
	p.pt.metrics.downloads.WithLabelValues(p.kind).Inc()
	go func() {
		err := g.fill(p.ctx, func(ctx context.Context) (*origin.Body, error) { return p.open(ctx, name) }, func(size int64) { p.uploadEarly(g, size) })
		if err != nil && p.ctx.Err() == nil {
			p.cancel() // one file failing fails the release: stop the others
		}
		if demanded {
			p.mu.Lock()
			if p.demanded--; p.demanded == 0 {
				close(p.settled)
				p.settled = make(chan struct{})
			}
			p.mu.Unlock()
		}
	}()
	return g, nil
}

// uploadEarly writes a file to the registry while it downloads, when its
// digest and size are known: the final push then finds it there. A failed
// early upload costs nothing but the time: the push uploads what is
// missing from the verified file.
func (p *pull) uploadEarly(g *growingFile, size int64) {
	if size < 0 || g.want == "" {
		return
	}
	desc := ocispec.Descriptor{MediaType: p.mediaType(g.name), Digest: digest.NewDigestFromEncoded(digest.SHA256, g.want), Size: size}
	if desc.Digest.Validate() != nil {
		return
	}
	p.uploads.Add(1)
	go func() {
		defer p.uploads.Done()
		open := func() (io.ReadCloser, error) { return g.reader(p.ctx) }
		err := oci.NewUpload(p.repo, oci.PushOptions{Concurrency: 1}).Blobs(p.ctx, []oci.Blob{{Descriptor: desc, Open: open}})
		if err != nil && p.ctx.Err() == nil {
			p.pt.log.Debug("pull-through: early upload failed, the push will retry it", "file", g.name, "error", err)
		}
	}()
}

// run drives the pull to its end: the requested files, then the rest,
// then the push; it records the outcome and removes the directory.
func (p *pull) run() {
	start := time.Now()
	res, err := p.download()
	if err == nil {
		p.uploads.Wait()
		res, err = p.finish(p.ctx, p.dir)
	}
	p.cancel()
	p.uploads.Wait()
	p.pt.finished(p, res, err, time.Since(start))
	p.mu.Lock()
	p.finished = true
	p.mu.Unlock()
	os.RemoveAll(p.dir) // readers still streaming keep their open files
}

// download waits for the files clients asked for, then fetches the
// others, and returns the first failure.
func (p *pull) download() (pulled, error) {
	for {
		p.mu.Lock()
		demanded, settled := p.demanded, p.settled
		p.mu.Unlock()
		if demanded == 0 {
			break
		}
		select {
		case <-settled:
		case <-p.ctx.Done():
			return pulled{}, p.failure()
		}
	}
	var g errgroup.Group
	g.SetLimit(p.pt.opts.Concurrency)
	for _, name := range p.files {
		g.Go(func() error {
			f, err := p.startFile(name, false)
			if err != nil {
				return err
			}
			return f.outcome(p.ctx)
		})
	}
	if err := g.Wait(); err != nil {
		return pulled{}, p.failure()
	}
	return pulled{}, nil
}

// failure is the error that ended the pull: the first file that failed,
// or the context's.
func (p *pull) failure() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range p.files {
		if g, ok := p.started[name]; ok {
			g.lock()
			done, err := g.done, g.err
			g.unlock()
			if done && err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
		}
	}
	if err := p.ctx.Err(); err != nil {
		return err
	}
	return errors.New("pull-through stopped")
}

func (p *pull) logAttrs() []any {
	return []any{slog.String("kind", p.kind), slog.String("release", p.what)}
}
