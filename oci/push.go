package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
)

// PushOptions tune a push.
type PushOptions struct {
	// Concurrency bounds parallel blob uploads (default 4).
	Concurrency int
	// Progress, when set, is called as bytes are uploaded (from several
	// goroutines; it must be safe for concurrent use).
	Progress func(done, total int64)
	// Replace lets the push overwrite version tags that hold other
	// content (see Tags.CheckVersions).
	Replace bool
	// BeforeTag, when set, is called once the root and everything it
	// names are written and before any tag is: what it writes about the
	// root (an attestation) is there when the tags appear. Its error ends
	// the push with nothing tagged. Not called when the tags already hold
	// the root (UpToDate).
	BeforeTag func(ctx context.Context, root ocispec.Descriptor) error
	// Fresh writes the blobs and manifests without asking first whether
	// the repository holds them: for content made for this push (a
	// referrer, a signature), which it cannot hold, the question costs a
	// round trip each (a registry takes what it holds again). Blobs in
	// Held are taken to be in a registry's repository (the empty config
	// its manifests name) and neither asked about nor written; should the
	// registry refuse a manifest for a blob it lacks, every blob is
	// checked and a missing one written then (manifestOfBlobs). An OCI
	// layout, which refuses no manifest, gets every blob.
	Fresh bool
	Held  []digest.Digest
}

// PushResult says what a push did.
type PushResult struct {
	Root ocispec.Descriptor
	// UpToDate is set when every tag already pointed at Root: nothing was written.
	UpToDate bool
	// Uploaded and Skipped count blobs and manifests sent or found present,
	// each once.
	Uploaded, Skipped int
	UploadedBytes     int64
}

// Tags are the tags a push writes, each with the digest it held when the
// caller decided to write it ("" for a tag that did not exist). A push
// refuses to move a tag that changed since: registries have no
// compare-and-swap, so the tag is read again just before it is written,
// and once more after a settling time (twice the time the check and write
// took), and a lost race is reported (ErrTagMoved) instead of silently
// replacing another push's result or claiming a tag another push replaced.
// Only a competing write delayed beyond the settling time (a stalled
// connection) can still go unnoticed; CI must serialise pushes of one
// version (docs/artifacts.md).
type Tags map[string]digest.Digest

// ErrTagMoved reports that a tag changed while a push was under way.
var ErrTagMoved = errors.New("tag moved during the push")

// CurrentTags reads what each tag holds now, for a push that will write them.
func CurrentTags(ctx context.Context, repo ReadOnlyRepository, tags []string) (Tags, error) {
	out := Tags{}
	for _, t := range tags {
		d, err := tagDigest(ctx, repo, t)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", t, err)
		}
		out[t] = d
	}
	return out, nil
}

// tagDigest is what a tag holds: "" when it does not exist.
func tagDigest(ctx context.Context, repo ReadOnlyRepository, tag string) (digest.Digest, error) {
	d, err := repo.Resolve(ctx, tag)
	if IsNotFound(err) {
		return "", nil
	}
	return d.Digest, err
}

// Upload is one push in progress. Blobs may be uploaded early (large files
// while other work goes on); Commit then writes what is left, the
// manifests children first, and the tags last, so an interrupted push
// leaves no tag pointing at missing content.
type Upload struct {
	repo Repository
	opts PushOptions

	mu      sync.Mutex
	present map[digest.Digest]bool // blobs and manifests uploaded or found by this upload
	// inflight are those being written by one of this upload's calls,
	// waiting those other calls wait for (closed once each is written or
	// has failed).
	inflight map[digest.Digest]bool
	waiting  map[digest.Digest][]chan struct{}
	wrote    map[digest.Digest]bool // written by this upload, not found
	res      PushResult
}

// Wrote reports whether this upload wrote d itself: the repository did
// not hold it (or, Fresh, was not asked).
func (u *Upload) Wrote(d digest.Digest) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.wrote[d]
}

// WhenBlob waits until this upload has written or found blob d (Blobs),
// or ctx ends.
func (u *Upload) WhenBlob(ctx context.Context, d digest.Digest) error {
	u.mu.Lock()
	if u.present[d] {
		u.mu.Unlock()
		return nil
	}
	ch := u.waitLocked(d)
	u.mu.Unlock()
	return u.await(ctx, d, ch)
}

// claim decides who writes d among this upload's calls: mine is set for
// the caller that is to (it must record or release d), wait for one that
// is to wait for another call's write; neither when d is written.
func (u *Upload) claim(d digest.Digest) (mine bool, wait chan struct{}) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case u.present[d]:
		return false, nil
	case u.inflight[d]:
		return false, u.waitLocked(d)
	}
	if u.inflight == nil {
		u.inflight = map[digest.Digest]bool{}
	}
	u.inflight[d] = true
	return true, nil
}

func (u *Upload) waitLocked(d digest.Digest) chan struct{} {
	ch := make(chan struct{})
	if u.waiting == nil {
		u.waiting = map[digest.Digest][]chan struct{}{}
	}
	u.waiting[d] = append(u.waiting[d], ch)
	return ch
}

// await waits on ch for d to be written by another call.
func (u *Upload) await(ctx context.Context, d digest.Digest, ch chan struct{}) error {
	select {
	case <-ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !u.has(d) {
		return fmt.Errorf("%s was not written: its write failed elsewhere in this push", d)
	}
	return nil
}

// release gives up a claim that failed, waking those waiting for it.
func (u *Upload) release(d digest.Digest) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.doneLocked(d)
}

func (u *Upload) doneLocked(d digest.Digest) {
	delete(u.inflight, d)
	for _, ch := range u.waiting[d] {
		close(ch)
	}
	delete(u.waiting, d)
}

// Manifest writes m ahead of Commit (which then counts it once, as
// found by this upload): a manifest whose blobs this upload has written
// or found already (WhenBlob), so that what refers to it (a platform's
// SBOM) is written while other blobs still upload.
func (u *Upload) Manifest(ctx context.Context, m Manifest) error {
	return u.manifestOfBlobs(ctx, m, nil)
}

// NewUpload starts a push to repo.
func NewUpload(repo Repository, opts PushOptions) *Upload {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	present := map[digest.Digest]bool{}
	if _, isLayout := repo.(*layout); !isLayout { // a layout checks no manifest's blobs: Held is not trusted
		for _, d := range opts.Held {
			present[d] = true
		}
	}
	return &Upload{repo: repo, opts: opts, present: present}
}

// Push writes an artifact atomically under tags: blobs, manifests, then
// the tags. When every tag already holds the artifact's root nothing is
// written.
func Push(ctx context.Context, repo Repository, a *Artifact, tags Tags, opts PushOptions) (PushResult, error) {
	return NewUpload(repo, opts).Commit(ctx, a, tags)
}

// Blobs uploads the blobs the repository lacks, in parallel; each is
// counted once however often it is named.
func (u *Upload) Blobs(ctx context.Context, blobs []Blob) error {
	todo := u.pending(blobs)
	var total, done int64
	for _, b := range todo {
		total += b.Descriptor.Size
	}
	progress := func(n int64) {
		if u.opts.Progress != nil {
			u.opts.Progress(atomic.AddInt64(&done, n), total)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(u.opts.Concurrency)
	for _, b := range todo {
		GoRecovered(g, func() error {
			d := b.Descriptor.Digest
			mine, wait := u.claim(d)
			if wait != nil { // another call of this upload writes it
				if err := u.await(gctx, d, wait); err != nil {
					return err
				}
				progress(b.Descriptor.Size)
				return nil
			}
			if !mine {
				progress(b.Descriptor.Size)
				return nil
			}
			err := u.blob(gctx, b, progress)
			if err != nil {
				u.release(d)
			}
			return err
		})
	}
	return g.Wait()
}

// has reports whether this upload has written or found d.
func (u *Upload) has(d digest.Digest) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.present[d]
}

// pending returns the blobs not yet handled by this upload, once each.
func (u *Upload) pending(blobs []Blob) []Blob {
	u.mu.Lock()
	defer u.mu.Unlock()
	seen := map[digest.Digest]bool{}
	var out []Blob
	for _, b := range blobs {
		d := b.Descriptor.Digest
		if u.present[d] || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, b)
	}
	return out
}

// blob uploads one blob unless the repository has it, starting again on a
// transient failure of either step (a registry may fail while another
// push writes the same blob).
func (u *Upload) blob(ctx context.Context, b Blob, progress func(int64)) error {
	for attempt := 0; ; attempt++ {
		err := u.blobOnce(ctx, b, progress)
		if err == nil || attempt >= maxUploadRetries || !transientFailure(err) {
			return err
		}
		if err := sleepContext(ctx, uploadBackoff<<attempt); err != nil {
			return err
		}
	}
}

func (u *Upload) blobOnce(ctx context.Context, b Blob, progress func(int64)) error {
	ok, err := u.holds(ctx, b.Descriptor)
	if err != nil {
		return fmt.Errorf("checking blob %s: %w", describe(b.Descriptor), err)
	}
	if ok {
		progress(b.Descriptor.Size)
		u.record(b.Descriptor, false)
		return nil
	}
	if err := u.upload(ctx, b, progress); err != nil {
		return fmt.Errorf("uploading blob %s: %w", describe(b.Descriptor), err)
	}
	u.record(b.Descriptor, true)
	return nil
}

// holds reports whether the repository holds d, asking it unless the
// push is Fresh (then: no).
func (u *Upload) holds(ctx context.Context, d ocispec.Descriptor) (bool, error) {
	if u.opts.Fresh {
		return false, nil
	}
	return u.repo.Exists(ctx, d)
}

// Uploads that meet a throttle, a 5xx or a dropped connection start again
// from the blob's beginning, a few times, further apart each time.
const (
	maxUploadRetries = 3
	uploadBackoff    = time.Second
)

func (u *Upload) upload(ctx context.Context, b Blob, progress func(int64)) error {
	r, err := b.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	// An OCI layout copies without looking at ctx: the reader does.
	sent := &progressReader{ctx: ctx, r: r, add: progress}
	err = pushIgnoringExisting(ctx, u.repo, b.Descriptor, sent)
	if err != nil {
		progress(-sent.n) // the next attempt starts again
	}
	return err
}

func transientFailure(err error) bool {
	switch Classify(err) {
	case FailureThrottled, FailureUnavailable, FailureServerError, FailureTimeout, FailureUnreachable:
		return true
	}
	return false
}

// sleepContext waits for d, or less when ctx ends first (its error).
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (u *Upload) record(d ocispec.Descriptor, uploaded bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.present[d.Digest] = true
	u.doneLocked(d.Digest)
	if uploaded {
		u.res.Uploaded++
		u.res.UploadedBytes += d.Size
		if u.wrote == nil {
			u.wrote = map[digest.Digest]bool{}
		}
		u.wrote[d.Digest] = true
	} else {
		u.res.Skipped++
	}
}

// Commit finishes the push: the remaining blobs, the manifests, then the
// tags, each checked against what the caller saw (see Tags). A version tag
// that holds other content is refused first (Tags.CheckVersions), before
// anything more is written. A push that tags (or finds its tags up to
// date) is then recorded in the held-address index of the client that
// opened the repository, if any (Options.HeldIndex).
func (u *Upload) Commit(ctx context.Context, a *Artifact, tags Tags) (PushResult, error) {
	root := a.Root()
	if tags.AllHold(root.Digest) {
		u.recordHeld(ctx, tags)
		return PushResult{Root: root, UpToDate: true}, nil
	}
	if err := tags.CheckVersions(root.Digest, u.opts.Replace); err != nil {
		return u.result(root), err
	}
	if err := u.Blobs(ctx, a.Blobs); err != nil {
		return u.result(root), err
	}
	rootByTag := u.rootWrittenByTag(tags)
	for i, m := range a.Manifests {
		if rootByTag && i == len(a.Manifests)-1 {
			break
		}
		if err := u.manifestOfBlobs(ctx, m, a.Blobs); err != nil {
			return u.result(root), err
		}
	}
	if u.opts.BeforeTag != nil {
		if err := u.opts.BeforeTag(ctx, root); err != nil {
			return u.result(root), err
		}
	}
	var slowest time.Duration
	for _, tag := range sortedTags(tags) {
		took, err := u.tag(ctx, a.Manifests[len(a.Manifests)-1], tag, tags[tag])
		if err != nil {
			return u.result(root), err
		}
		slowest = max(slowest, took)
	}
	if rootByTag {
		u.record(root, true)
	}
	if err := u.settle(ctx, root, tags, slowest); err != nil {
		return u.result(root), err
	}
	u.recordHeld(ctx, tags)
	return u.result(root), nil
}

// rootWrittenByTag reports whether the root manifest is written by its
// first tag's write rather than on its own first: for content made now
// (Fresh: the registry cannot hold it) with nothing to write between the
// root and its tags (no BeforeTag), where the repository takes a
// manifest with its tag (a registry). One request instead of three (the
// manifest, then Tag's fetch of it and its write under the tag).
func (u *Upload) rootWrittenByTag(tags Tags) bool {
	_, ok := u.repo.(registry.ReferencePusher)
	return ok && u.opts.Fresh && u.opts.BeforeTag == nil && len(tags) > 0
}

// recordHeld records a push that tags in the held-address index of the
// client that opened the repository, if it keeps one (Client.RecordHeld:
// a failure is a warning, the push stands).
func (u *Upload) recordHeld(ctx context.Context, tags Tags) {
	if r, ok := u.repo.(*remote.Repository); ok && len(tags) > 0 {
		recordHeldOf(ctx, r) // heldrecord.go
	}
}

// settle waits for competing writes that checked the tags before ours
// landed (they take about as long from check to write as ours did), then
// reads the tags back: a push must not claim a tag that another push
// replaced right after it (that push reports the race too).
func (u *Upload) settle(ctx context.Context, root ocispec.Descriptor, tags Tags, checkToWrite time.Duration) error {
	if len(tags) == 0 {
		return nil // nothing was tagged (a referrer): nothing to settle
	}
	if err := sleepContext(ctx, min(2*checkToWrite+settleMargin, maxSettle)); err != nil {
		return err
	}
	for _, tag := range sortedTags(tags) {
		d, err := u.repo.Resolve(ctx, tag)
		switch {
		case err != nil:
			return fmt.Errorf("checking tag %s after writing it: %w", tag, err)
		case d.Digest != root.Digest:
			return fmt.Errorf("%w: %s was replaced by %s right after this push (%s) wrote it: serialise pushes of one version",
				ErrTagMoved, tag, d.Digest, root.Digest)
		}
	}
	return nil
}

// The settling time after tag writes: twice the slowest check-and-write,
// plus settleMargin, at most maxSettle.
const (
	settleMargin = 20 * time.Millisecond
	maxSettle    = 5 * time.Second
)

func (u *Upload) result(root ocispec.Descriptor) PushResult {
	u.mu.Lock()
	defer u.mu.Unlock()
	res := u.res
	res.Root = root
	return res
}

// manifestOfBlobs writes manifest m, whose blobs this upload has written
// or found. A registry that answers that a blob is unknown all the same
// has met another push of the same blobs at that moment (Distribution,
// when two pushes of one release finish together): the blobs are checked
// again, a missing one uploaded again, and the manifest written again, a
// few times.
func (u *Upload) manifestOfBlobs(ctx context.Context, m Manifest, blobs []Blob) error {
	for attempt := 0; ; attempt++ {
		err := u.manifest(ctx, m)
		if err == nil || attempt >= maxUploadRetries || !blobUnknown(err) {
			return err
		}
		if err := sleepContext(ctx, uploadBackoff/4<<attempt); err != nil {
			return err
		}
		if err := u.restoreBlobs(ctx, blobs); err != nil {
			return err
		}
	}
}

// blobUnknown reports whether err is a registry's answer that a blob a
// manifest names is not in the repository.
func blobUnknown(err error) bool {
	for _, c := range ErrorCodes(err) {
		if c == "MANIFEST_BLOB_UNKNOWN" || c == "BLOB_UNKNOWN" {
			return true
		}
	}
	return false
}

// restoreBlobs uploads again those of blobs the repository no longer
// has (not counted again in the result: each blob counts once).
func (u *Upload) restoreBlobs(ctx context.Context, blobs []Blob) error {
	for _, b := range blobs {
		ok, err := u.repo.Exists(ctx, b.Descriptor)
		if err != nil {
			return fmt.Errorf("checking blob %s: %w", describe(b.Descriptor), err)
		}
		if !ok {
			if err := u.upload(ctx, b, func(int64) {}); err != nil {
				return fmt.Errorf("uploading blob %s again: %w", describe(b.Descriptor), err)
			}
		}
	}
	return nil
}

func (u *Upload) manifest(ctx context.Context, m Manifest) error {
	d := m.Descriptor.Digest
	mine, wait := u.claim(d)
	if wait != nil { // written ahead (Manifest) at this moment
		return u.await(ctx, d, wait)
	}
	if !mine {
		return nil // written ahead: counted then
	}
	ok, err := u.holds(ctx, m.Descriptor)
	if err == nil && !ok {
		if err = pushIgnoringExisting(ctx, u.repo, m.Descriptor, bytes.NewReader(m.Bytes)); err != nil {
			err = fmt.Errorf("uploading manifest %s: %w", d, err)
		}
	} else if err != nil {
		err = fmt.Errorf("checking manifest %s: %w", d, err)
	}
	if err != nil {
		u.release(d)
		return err
	}
	u.record(m.Descriptor, !ok)
	return nil
}

// tag writes one tag after checking that it still holds what it held when
// the push was decided; it returns how long the check and write took.
func (u *Upload) tag(ctx context.Context, rootManifest Manifest, tag string, was digest.Digest) (time.Duration, error) {
	root := rootManifest.Descriptor
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	start := time.Now()
	now, err := tagDigest(ctx, u.repo, tag)
	if err != nil {
		return 0, fmt.Errorf("checking tag %s before writing it: %w", tag, err)
	}
	if now == root.Digest {
		return time.Since(start), nil
	}
	if now != was {
		return 0, fmt.Errorf("%w: %s held %s when this push started and holds %s now; this push (%s) leaves it alone: serialise pushes of one version",
			ErrTagMoved, tag, orNone(was), orNone(now), root.Digest)
	}
	if err := u.tagWaitingOutLinks(ctx, rootManifest, tag); err != nil {
		return 0, fmt.Errorf("tagging %s: %w", tag, err)
	}
	return time.Since(start), nil
}

// tagWaitingOutLinks points tag at root. A registry that answers that a
// blob of root is unknown, though this push wrote or found every one,
// is linking that blob for another push of the same content at that
// moment (Distribution rewrites a repository's blob link on each
// upload of it): the tag is written again a little later, a few times.
func (u *Upload) tagWaitingOutLinks(ctx context.Context, root Manifest, tag string) error {
	for attempt := 0; ; attempt++ {
		err := u.tagOnce(ctx, root, tag)
		if err == nil || attempt >= maxUploadRetries || !blobUnknown(err) {
			return err
		}
		if err := sleepContext(ctx, uploadBackoff/4<<attempt); err != nil {
			return err
		}
	}
}

// tagOnce writes root under tag: sending the manifest with the tag where
// the repository takes that (a registry: one request, where Tag would
// fetch the manifest back before sending it again).
func (u *Upload) tagOnce(ctx context.Context, root Manifest, tag string) error {
	if p, ok := u.repo.(registry.ReferencePusher); ok && root.Bytes != nil {
		return p.PushReference(ctx, root.Descriptor, bytes.NewReader(root.Bytes), tag)
	}
	return u.repo.Tag(ctx, root.Descriptor, tag)
}

func orNone(d digest.Digest) string {
	if d == "" {
		return "nothing"
	}
	return d.String()
}

// AllHold reports whether every tag already holds d: the one rule for "the
// registry already has this", with nothing to write.
func (t Tags) AllHold(d digest.Digest) bool {
	if len(t) == 0 {
		return false
	}
	for _, held := range t {
		if held != d {
			return false
		}
	}
	return true
}

func sortedTags(tags Tags) []string {
	out := make([]string, 0, len(tags))
	for t := range tags {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
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

// progressReader reports the bytes read, and fails once ctx ends.
type progressReader struct {
	ctx context.Context
	r   io.Reader
	add func(int64)
	n   int64
}

func (p *progressReader) Read(b []byte) (int, error) {
	if err := p.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := p.r.Read(b)
	if n > 0 {
		p.n += int64(n)
		p.add(int64(n))
	}
	return n, err
}
