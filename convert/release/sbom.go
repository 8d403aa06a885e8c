package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// SBOMs of the platforms (convert/sbom).
//
// Push makes the SBOM of every platform's zip while the zips upload and
// their h1 hashes are computed, and stores each as a referrer of its
// platform manifest (sbom.Write) once the manifests are written and
// before any tag is (the push's BeforeTag, beside the caller's): a
// reader never finds a version tagged without its SBOMs. A platform whose
// manifest has an SBOM already keeps it (a re-push writes nothing). A
// release the registry holds already (nothing to upload) gets the SBOMs it
// lacks after the push, its zips read then. Every path that stores a
// provider release (push provider, push mirror, mirror, the proxy's
// pull-through) stores them so.
//
// The SBOM is reproducible: named by the release's type, version and
// platform, dated by its SHA256SUMS signature (SBOMTime), so the same zip
// gives the same bytes whichever path stores it, and BackfillSBOMs, from
// the registry's copy, gives them too.
//
// A zip that FromZip cannot describe (no executable: ErrNoExecutable; a
// zip beyond its bounds) gets no SBOM: the push goes on and the result
// says why (SBOMNoExecutable, SBOMFailed). Failing to store an SBOM or its
// attestation fails the push, before anything is tagged.

// SBOMOptions say what Push does about SBOMs.
type SBOMOptions struct {
	// Skip stores no SBOMs (push provider --no-sbom).
	Skip bool
	// TempDir is where executables are copied while they are read
	// (sbom.Options.TempDir).
	TempDir string
	// Attest, when set, is called for each platform's SBOM Push stored,
	// before the tags are written. It attests the SBOM (predicate type
	// sbom.SPDXPredicateType, the SPDX document the predicate); its error
	// fails the push.
	Attest SBOMAttester
}

// SBOMAttester attests one platform's SBOM, stored in repo.
type SBOMAttester func(ctx context.Context, repo oci.Repository, s StoredSBOM) (SBOMAttested, error)

// SBOMAttested is what an SBOMAttester did.
type SBOMAttested struct {
	// Attested says it wrote the attestation now.
	Attested bool
	// WhileTagging, when not nil, writes what is left of it (the
	// tag-schema form of a fresh platform manifest's): Push runs it
	// while the version tags are written and settle, and fails if it
	// does; StoreSBOMs, which writes no tags, runs it before it returns.
	WhileTagging func(context.Context) error
}

// StoredSBOM is what an SBOMAttester is told of one platform's SBOM.
type StoredSBOM struct {
	// Manifest is the platform manifest the SBOM describes.
	Manifest ocispec.Descriptor
	// SPDX is the document.
	SPDX []byte
	// Written says the SBOM was stored now; not written, it was found
	// there (the attester may check that its attestation is there too).
	Written bool
	// Fresh says this push wrote the platform manifest itself (the
	// repository did not hold it): nothing refers to it but what this
	// push wrote, so no attestation of it is looked for.
	Fresh bool
}

// SBOMStatus is what became of a platform's SBOM.
type SBOMStatus string

// The SBOM statuses.
const (
	// SBOMWritten: stored now.
	SBOMWritten SBOMStatus = "written"
	// SBOMPresent: the platform manifest has an SBOM already.
	SBOMPresent SBOMStatus = "present"
	// SBOMNoExecutable: the zip holds no executable, and so no SBOM.
	SBOMNoExecutable SBOMStatus = "no executable"
	// SBOMFailed: the zip could not be described (Err says why).
	SBOMFailed SBOMStatus = "error"
	// SBOMSkipped: SBOMs were not asked for.
	SBOMSkipped SBOMStatus = "skipped"
)

// SBOMResult is what became of one platform's SBOM.
type SBOMResult struct {
	Platform names.Platform
	// Manifest is the platform manifest the SBOM describes.
	Manifest digest.Digest
	Status   SBOMStatus
	// Referrer is the referrer holding the SBOM (written or present).
	Referrer digest.Digest
	// Attested is set when the SBOM's attestation was written now.
	Attested bool
	// Err says why there is no SBOM (SBOMNoExecutable, SBOMFailed).
	Err error
	// whileTagging is what is left of the attestation (SBOMAttested).
	whileTagging func(context.Context) error
}

// SBOMs are what the last Push did about each platform's SBOM, by
// platform; nil when it did nothing about them (SBOMOptions.Skip, or a
// push that failed before).
func (rel *Provider) SBOMs() []SBOMResult { return rel.sbomResults }

// SBOMTime is when a release's SBOMs say they were made: when its
// SHA256SUMS was signed (signature is in binary form; none: the Unix
// epoch, as the zero time says to sbom.FromZip).
func SBOMTime(signature []byte) time.Time {
	if len(signature) == 0 {
		return time.Time{}
	}
	return pgp.SignatureTime(signature)
}

// MakeSBOM makes the SPDX SBOM of one platform's zip, read from r (size
// bytes, sha256 zipDigest, already verified): the document every path
// stores for it. known, when set, are sha256 sums of its entries computed
// already (sbom.Options.SHA256).
func MakeSBOM(r io.ReaderAt, size int64, typ, version string, p names.Platform, zipDigest digest.Digest, created time.Time, tempDir string, known map[string]string) ([]byte, error) {
	doc, err := sbom.FromZip(r, size, sbom.Options{Name: typ, Version: version, Platform: p.String(), ZipDigest: zipDigest, Created: created, TempDir: tempDir, SHA256: known})
	if err != nil {
		return nil, err
	}
	return doc.SPDX()
}

// SBOMSource is one platform's zip an SBOM is stored for: its platform
// manifest, and how to make the SBOM (when the manifest has none).
type SBOMSource struct {
	Platform names.Platform
	Manifest ocispec.Descriptor
	// Written says the push wrote the manifest itself (it was not in the
	// repository), so it has no SBOM yet: none is looked for.
	Written bool
	// Make makes the SPDX document; its error (but the context's) leaves
	// the platform without an SBOM (SBOMNoExecutable, SBOMFailed) and the
	// others go on.
	Make func(ctx context.Context) ([]byte, error)
}

// StoreSBOMs stores, for each source whose platform manifest has no SBOM,
// the one its Make makes (at most concurrency at once), attesting each
// with attest when set. It fails on what the registry fails (reading the
// referrers, writing the SBOM or its attestation), not on a zip it
// cannot describe (that platform's result says why).
func StoreSBOMs(ctx context.Context, repo oci.Repository, sources []SBOMSource, concurrency int, attest SBOMAttester) ([]SBOMResult, error) {
	out := make([]SBOMResult, len(sources))
	// ctx as given, never one canceled when they return: an attestation
	// may leave a write going on under it (SBOMAttested.WhileTagging).
	var g errgroup.Group
	g.SetLimit(max(concurrency, 1))
	for i, s := range sources {
		g.Go(func() (err error) {
			out[i], err = storeSBOM(ctx, repo, s, attest)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return out, err
	}
	return out, runWhileTagging(ctx, out, concurrency)
}

// runWhileTagging runs what the results' attestations left to write
// (SBOMAttested.WhileTagging), at most concurrency at once, each once:
// a result's is gone once run.
func runWhileTagging(ctx context.Context, results []SBOMResult, concurrency int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(concurrency, 1))
	for i := range results {
		r := &results[i]
		if r.whileTagging == nil {
			continue
		}
		write := r.whileTagging
		r.whileTagging = nil
		g.Go(func() error {
			if err := write(gctx); err != nil {
				return fmt.Errorf("attesting the SBOM of %s (%s): %w", r.Platform, r.Manifest, err)
			}
			return nil
		})
	}
	return g.Wait()
}

func storeSBOM(ctx context.Context, repo oci.Repository, s SBOMSource, attest SBOMAttester) (SBOMResult, error) {
	r := SBOMResult{Platform: s.Platform, Manifest: s.Manifest.Digest}
	var spdx []byte
	var held *sbom.Stored
	err := sbom.ErrNoSBOM // a manifest the push wrote has none
	if !s.Written {
		held, err = sbom.Read(ctx, repo, s.Manifest.Digest)
	}
	switch {
	case err == nil:
		r.Status, r.Referrer, spdx = SBOMPresent, held.Referrer.Digest, held.SPDX
	case errors.Is(err, sbom.ErrNoSBOM):
		if spdx, err = s.Make(ctx); err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			r.Status, r.Err = SBOMFailed, err
			if errors.Is(err, sbom.ErrNoExecutable) {
				r.Status = SBOMNoExecutable
			}
			return r, nil
		}
		doc, err := sbom.ParseSPDX(spdx)
		if err != nil {
			return r, err
		}
		if attest != nil && s.Written {
			// Nothing to read first: the SBOM and its attestation are
			// written at once, their round trips overlapping.
			return writeAndAttest(ctx, repo, s, r, spdx, doc.Created, attest)
		}
		d, err := sbom.Write(ctx, repo, s.Manifest, spdx, doc.Created) // none there
		if err != nil {
			return r, fmt.Errorf("%s: %w", s.Platform, err)
		}
		r.Status, r.Referrer = SBOMWritten, d.Digest
	default:
		return r, fmt.Errorf("reading the SBOMs of %s (%s): %w", s.Platform, s.Manifest.Digest, err)
	}
	if attest != nil {
		stored := StoredSBOM{Manifest: s.Manifest, SPDX: spdx, Written: r.Status == SBOMWritten, Fresh: s.Written}
		a, err := attest(ctx, repo, stored)
		if err != nil {
			return r, fmt.Errorf("attesting the SBOM of %s (%s): %w", s.Platform, s.Manifest.Digest, err)
		}
		r.Attested, r.whileTagging = a.Attested, a.WhileTagging
	}
	return r, nil
}

// writeAndAttest stores the SBOM of a platform manifest the push wrote
// and attests it, at once (both are referrers of the manifest; oras-go
// merges their changes to its referrers index, or makes them one after
// the other).
func writeAndAttest(ctx context.Context, repo oci.Repository, s SBOMSource, r SBOMResult, spdx []byte, created time.Time, attest SBOMAttester) (SBOMResult, error) {
	var written ocispec.Descriptor
	var attested SBOMAttested
	var g errgroup.Group // ctx as given: the attestation may leave a write going on under it
	g.Go(func() (err error) {
		if written, err = sbom.Write(ctx, repo, s.Manifest, spdx, created); err != nil {
			return fmt.Errorf("%s: %w", s.Platform, err)
		}
		return nil
	})
	g.Go(func() (err error) {
		stored := StoredSBOM{Manifest: s.Manifest, SPDX: spdx, Written: true, Fresh: true}
		if attested, err = attest(ctx, repo, stored); err != nil {
			return fmt.Errorf("attesting the SBOM of %s (%s): %w", s.Platform, s.Manifest.Digest, err)
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return r, err
	}
	r.Status, r.Referrer = SBOMWritten, written.Digest
	r.Attested, r.whileTagging = attested.Attested, attested.WhileTagging
	return r, nil
}

// sbomRun is one push's SBOMs: made and stored while the zips upload
// (start), or after a push that uploaded nothing (store); the push's
// BeforeTag waits for them (before).
type sbomRun struct {
	rel     *Provider
	repo    oci.Repository
	created time.Time

	mu     sync.Mutex
	made   []*madeSBOM // by package, once started
	stored bool
	// tagging is the attestations' writes left for while the tags are
	// written (SBOMAttested.WhileTagging), once started by before: its
	// error, once they are done.
	tagging chan error
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	config    sync.Once
	configErr error
}

// madeSBOM is one package's SBOM, made and stored in the background:
// result once done is closed, err a failure that fails the push.
type madeSBOM struct {
	done   chan struct{}
	result SBOMResult
	err    error
}

// newSBOMRun is the push's SBOM run, nil when SBOMs are skipped.
func (rel *Provider) newSBOMRun(repo oci.Repository) *sbomRun {
	rel.sbomResults = nil
	if rel.SBOM.Skip {
		return nil
	}
	return &sbomRun{rel: rel, repo: repo, created: SBOMTime(rel.Files.Signature.Data)}
}

// start makes and stores every package's SBOM in the background, while
// the zips upload (up): each is made once the h1 pass has read its zip
// (the hashed it returns is told the files' sums, which the SBOM takes
// instead of hashing the executables again), at most half the CPUs at
// once (the h1 hashes and the upload share them); once its zip is
// uploaded, the platform manifest is written ahead of the others
// (Upload.Manifest) and the SBOM, and its attestation, stored as its
// referrers. finish stops what is left.
func (s *sbomRun) start(ctx context.Context, up *oci.Upload) (hashed func(i int, sums map[string]string)) {
	if s == nil {
		return nil
	}
	ctx, s.cancel = context.WithCancel(ctx)
	s.made = make([]*madeSBOM, len(s.rel.Packages))
	sums := make([]chan map[string]string, len(s.rel.Packages))
	sem := make(chan struct{}, max(runtime.NumCPU()/2, 1))
	for i, p := range s.rel.Packages {
		m := &madeSBOM{done: make(chan struct{})}
		s.made[i], sums[i] = m, make(chan map[string]string, 1)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer close(m.done)
			m.result, m.err = s.makeAndStore(ctx, up, p, sums[i], sem)
		}()
	}
	return func(i int, known map[string]string) { sums[i] <- known }
}

// makeAndStore is one package's part of start.
func (s *sbomRun) makeAndStore(ctx context.Context, up *oci.Upload, p Package, sums <-chan map[string]string, sem chan struct{}) (SBOMResult, error) {
	var known map[string]string
	select {
	case known = <-sums:
	case <-ctx.Done():
		return SBOMResult{}, ctx.Err()
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return SBOMResult{}, ctx.Err()
	}
	spdx, makeErr := s.make(ctx, p, known)
	<-sem
	zip := p.zipDescriptor()
	m, err := oci.ProviderPlatformManifest(zip)
	if err != nil {
		return SBOMResult{}, err
	}
	if makeErr == nil { // something to refer to the manifest: write it now
		s.config.Do(func() { s.configErr = up.Blobs(ctx, []oci.Blob{oci.EmptyConfig()}) })
		if s.configErr != nil {
			return SBOMResult{}, s.configErr
		}
		if err := up.WhenBlob(ctx, zip.Digest); err != nil {
			return SBOMResult{}, err
		}
		if err := up.Manifest(ctx, m); err != nil {
			return SBOMResult{}, err
		}
	}
	src := SBOMSource{Platform: p.Platform, Manifest: m.Descriptor, Written: makeErr == nil && up.Wrote(m.Descriptor.Digest),
		Make: func(context.Context) ([]byte, error) { return spdx, makeErr }}
	return storeSBOM(ctx, s.repo, src, s.rel.SBOM.Attest)
}

// finish stops what start began and waits for it (its temporary files
// are gone when it returns), and for the writes left for while tagging.
func (s *sbomRun) finish() {
	if s == nil {
		return
	}
	if s.tagging != nil {
		<-s.tagging
		s.tagging <- nil // waited for by after, which read it first
	}
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.wg.Wait()
}

// make makes one package's SBOM from its file; known are sums of its
// files already computed, if any.
func (s *sbomRun) make(ctx context.Context, p Package, known map[string]string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := localfile.OpenRegular(p.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zd := digest.NewDigestFromEncoded(digest.SHA256, p.SHA256)
	return MakeSBOM(f, p.Size, s.rel.Type, s.rel.Version, p.Platform, zd, s.created, s.rel.SBOM.TempDir, known)
}

// before is the push's BeforeTag: the SBOMs stored (start's finished)
// while next (the caller's: the release's attestation, about another
// subject) runs; both are done before any tag is written. What the
// SBOMs' attestations left for later (the tag schema's .att of platform
// manifests the push wrote) starts then, beside the tags' writes and
// settling; after waits for it.
func (s *sbomRun) before(next func(context.Context, ocispec.Descriptor) error) func(context.Context, ocispec.Descriptor) error {
	if s == nil {
		return next
	}
	return func(ctx context.Context, root ocispec.Descriptor) error {
		// ctx as given, never one canceled when both return: next may
		// leave work running past it (the tag schema's writes).
		var g errgroup.Group
		g.Go(func() error { return s.store(ctx) })
		if next != nil {
			g.Go(func() error { return next(ctx, root) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
		s.startTagging(ctx)
		return nil
	}
}

// startTagging starts the writes the stored SBOMs' attestations left for
// while tagging (none: nothing starts).
func (s *sbomRun) startTagging(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tagging != nil || !hasWhileTagging(s.rel.sbomResults) {
		return
	}
	s.tagging = make(chan error, 1)
	results := s.rel.sbomResults
	go func() { s.tagging <- runWhileTagging(ctx, results, sbomStoreConcurrency) }()
}

func hasWhileTagging(results []SBOMResult) bool {
	for _, r := range results {
		if r.whileTagging != nil {
			return true
		}
	}
	return false
}

// after follows a push: one that wrote no tag (its tags held the
// release already) stores the SBOMs the platforms lack now, and their
// attestations whole; one that tagged waits for the attestations' writes
// left for while tagging, whose failure fails it.
func (s *sbomRun) after(ctx context.Context, err error) error {
	if s == nil {
		return err
	}
	s.mu.Lock()
	tagging := s.tagging
	s.mu.Unlock()
	if tagging != nil {
		laterErr := <-tagging
		tagging <- laterErr // finish waits too
		if err == nil && laterErr != nil {
			return fmt.Errorf("storing the SBOMs: %w", laterErr)
		}
	}
	if err != nil {
		return err
	}
	if err := s.store(ctx); err != nil {
		return err
	}
	if tagging == nil {
		return s.finishUntagged(ctx)
	}
	return nil
}

// finishUntagged runs, for a push that wrote no tag, what the stored
// SBOMs' attestations left for while tagging.
func (s *sbomRun) finishUntagged(ctx context.Context) error {
	s.mu.Lock()
	results := s.rel.sbomResults
	s.mu.Unlock()
	if err := runWhileTagging(ctx, results, sbomStoreConcurrency); err != nil {
		return fmt.Errorf("storing the SBOMs: %w", err)
	}
	return nil
}

// store finishes the SBOMs, once per push: waits for those start made
// and stored, or (a push that uploaded nothing) stores those the
// platform manifests lack, made now.
func (s *sbomRun) store(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stored {
		return nil
	}
	var results []SBOMResult
	if s.made != nil {
		results = make([]SBOMResult, len(s.made))
		for i, m := range s.made {
			select {
			case <-m.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if m.err != nil {
				return fmt.Errorf("storing the SBOMs: %w", m.err)
			}
			results[i] = m.result
		}
	} else {
		sources := make([]SBOMSource, len(s.rel.Packages))
		for i, p := range s.rel.Packages {
			m, err := oci.ProviderPlatformManifest(p.zipDescriptor())
			if err != nil {
				return err
			}
			sources[i] = SBOMSource{Platform: p.Platform, Manifest: m.Descriptor, Make: func(ctx context.Context) ([]byte, error) {
				return s.make(ctx, p, nil)
			}}
		}
		var err error
		if results, err = StoreSBOMs(ctx, s.repo, sources, sbomStoreConcurrency, s.rel.SBOM.Attest); err != nil {
			return fmt.Errorf("storing the SBOMs: %w", err)
		}
	}
	s.stored = true
	s.rel.sbomResults = results
	return nil
}

// sbomStoreConcurrency bounds the platforms whose SBOMs are stored at once
// (each a referrers listing and a referrer's writes, and with an
// attestation its writes and tag settling: a release's platforms are
// usually stored in one round).
const sbomStoreConcurrency = 8

// BackfillSBOMs stores the SBOM of every platform of a stored provider
// version (pv, in repo) whose manifest has none, as Push would have
// stored it: each zip is read from the registry into a temporary file
// (in opts.TempDir), its size and digest verified, and described; the
// document is named and dated from the version's provenance (the type,
// the SHA256SUMS signature), or, for a version without provenance
// (pushed by another tool), by typ, pv.Version and the epoch. opts.Attest attests
// them as in Push; platforms, when not empty, selects the platforms.
func BackfillSBOMs(ctx context.Context, repo oci.Repository, pv *oci.ProviderVersion, typ string, platforms []names.Platform, opts SBOMOptions) ([]SBOMResult, error) {
	var created time.Time
	version := pv.Version.String()
	if pv.Provenance != nil {
		prov, files, err := oci.ReadProvenance(ctx, repo, *pv.Provenance)
		if err != nil {
			return nil, fmt.Errorf("%s: reading its provenance: %w", pv.Version, err)
		}
		typ, version, created = prov.Type, prov.Version, SBOMTime(files.Signature.Data)
	}
	var sources []SBOMSource
	for _, p := range pv.SortedPlatforms() {
		if len(platforms) > 0 && !slices.Contains(platforms, p) {
			continue
		}
		manifest := pv.Platforms[p]
		sources = append(sources, SBOMSource{Platform: p, Manifest: manifest, Make: func(ctx context.Context) ([]byte, error) {
			zip, err := oci.ReadProviderPackage(ctx, repo, manifest)
			if err != nil {
				return nil, err
			}
			f, err := os.CreateTemp(opts.TempDir, "oci-tofu-sbom-zip-*")
			if err != nil {
				return nil, err
			}
			defer func() {
				f.Close()
				os.Remove(f.Name())
			}()
			if err := oci.FetchBlob(ctx, repo, zip, oci.MaxPackageSize, f); err != nil {
				return nil, err
			}
			return MakeSBOM(f, zip.Size, typ, version, p, zip.Digest, created, opts.TempDir, nil)
		}})
	}
	return StoreSBOMs(ctx, repo, sources, 2, opts.Attest)
}
