package pullthrough

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
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// Pull is one origin release being fetched into the registry: every file
// downloaded once (File) into a temporary release directory, the
// files clients ask for first and at once, the others in the background
// once no client-requested download is running any more, at most
// Concurrency at a time; then the directory is pushed (finish) and the
// version tagged. It runs detached from the requests that started it.
type Pull struct {
	e    *Engine
	kind names.Kind // for logs and metrics
	key  string
	// failKey names the release in the failure memory (origin and version).
	failKey string
	what    string
	// attrs are more attributes of the pull's log lines.
	attrs []any
	// provider or tofu is the verified origin release being pulled.
	provider *ingest.ProviderOriginRelease
	tofu     *ingest.TofuOriginRelease // "registry.opentofu.org/hashicorp/aws 5.0.0", for logs
	// ingested is the event of what the pull stores, but its digest
	// (nil: no event, an OpenTofu release).
	ingested *events.VersionIngested
	// keys is the check of the key that verified a provider release
	// (keys.go), nil for other pulls.
	keys  *keysCheck
	dir   string
	repo  oci.Repository
	files []string // every file to download
	// open starts a file's download; want is its expected sha256 ("" for
	// files nothing lists, which are not uploaded early).
	open      func(ctx context.Context, name string) (*origin.Body, error)
	want      func(name string) string
	mediaType func(name string) string
	// finish pushes the complete directory and says what it pushed.
	finish func(ctx context.Context, dir string) (Stored, error)

	ctx    context.Context
	cancel context.CancelFunc
	// lease is this replica's claim on the release when replicas share
	// state (released once the outcome is recorded), or nil.
	lease sharedstate.Lease

	mu       sync.Mutex
	started  map[string]*File
	demanded int           // client-requested downloads running
	settled  chan struct{} // closed and replaced when demanded drops to 0
	finished bool
	uploads  sync.WaitGroup

	// done is closed once the outcome (res, err) is recorded.
	done chan struct{}
	res  Stored
	err  error
}

// Stored is what a finished pull stored: the root's descriptor and, by
// file name, each file's blob.
type Stored struct {
	Root  ocispec.Descriptor
	Files map[string]ocispec.Descriptor
	// Shared marks what another replica recorded: Root alone, a hint to
	// be read from the registry and checked, Files unknown.
	Shared bool
}

// ErrFinished means the pull has ended: what it stored is read from
// the registry now.
var ErrFinished = errors.New("pull-through of this release has finished")

// fetch returns the growing file for name, starting its download at once
// if it has not started (a client waits for it).
func (p *Pull) fetch(name string) (*File, error) {
	return p.startFile(name, true)
}

func (p *Pull) startFile(name string, demanded bool) (*File, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return nil, ErrFinished
	}
	if g, ok := p.started[name]; ok {
		return g, nil
	}
	g, err := newFile(name, filepath.Join(p.dir, name), p.want(name), p.e.opts.MaxFileSize)
	if err != nil {
		return nil, err
	}
	g.counted = p.e.metrics.originBytes.Add
	p.started[name] = g
	if demanded {
		p.demanded++
	}
	p.e.metrics.downloads.WithLabelValues(string(p.kind)).Inc()
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
func (p *Pull) uploadEarly(g *File, size int64) {
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
		open := func() (io.ReadCloser, error) { return g.Reader(p.ctx) }
		err := oci.NewUpload(p.repo, oci.PushOptions{Concurrency: 1}).Blobs(p.ctx, []oci.Blob{{Descriptor: desc, Open: open}})
		if err != nil && p.ctx.Err() == nil {
			p.e.log.Debug("pull-through: early upload failed, the push will retry it", "file", g.name, "error", err)
		}
	}()
}

// run drives the pull to its end: the requested files, then the rest,
// then the push; it records the outcome and removes the directory.
func (p *Pull) run() {
	start := time.Now()
	res, err := p.download()
	if err == nil {
		p.uploads.Wait()
		res, err = p.finish(p.ctx, p.dir)
	}
	p.cancel()
	p.uploads.Wait()
	p.e.finished(p, res, err, time.Since(start))
	p.mu.Lock()
	p.finished = true
	p.mu.Unlock()
	os.RemoveAll(p.dir) // readers still streaming keep their open files
	p.res, p.err = res, err
	close(p.done)
}

// download waits for the files clients asked for, then fetches the
// others, and returns the first failure.
func (p *Pull) download() (Stored, error) {
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
			return Stored{}, p.failure()
		}
	}
	var g errgroup.Group
	g.SetLimit(p.e.opts.Concurrency)
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
		return Stored{}, p.failure()
	}
	return Stored{}, nil
}

// failure is the error that ended the Pull: the first file that failed,
// or the context's.
func (p *Pull) failure() error {
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

func (p *Pull) logAttrs() []any {
	return append([]any{slog.String("kind", string(p.kind)), slog.String("release", p.what)}, p.attrs...)
}

// Provider is the verified origin release a provider pull fetches (nil
// for an OpenTofu release).
func (p *Pull) Provider() *ingest.ProviderOriginRelease { return p.provider }

// Tofu is the verified OpenTofu release a pull fetches (nil for a
// provider release).
func (p *Pull) Tofu() *ingest.TofuOriginRelease { return p.tofu }
