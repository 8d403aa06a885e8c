package modulepkg

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/semaphore"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Options tune Pack.
type Options struct {
	// AllowNoRoot accepts a package without a .tf/.tofu/.tf.json/.tofu.json
	// file at its root (e.g. a package of several modules, each consumed
	// with //subdir).
	AllowNoRoot bool
	// TempDir receives the zip (default os.TempDir()).
	TempDir string
	// Concurrency bounds parallel compression (default GOMAXPROCS).
	Concurrency int
	// Cache, when set, records what trees pack to and the files' hashes,
	// so that an unchanged tree is recognised quickly (HashTree).
	Cache *Cache
	// Charge, when set, is told the size of each write to Pack's
	// temporary zip before it is made, and stops the packing with its
	// error (a disk budget shared with other work).
	Charge func(n int64) error
}

// Zip is a checked module package zip on disk.
type Zip struct {
	// Path of the zip. For Pack it is a temporary file that Remove
	// deletes.
	Path   string
	Digest digest.Digest
	Size   int64
	// Files are the zip's file entries, sorted.
	Files []string
	// Tree is the packed tree's content digest (see HashTree); empty
	// for a zip given by the user.
	Tree digest.Digest
	temp bool
}

// Blob returns the zip as an OCI layer blob (archive/zip), streamed from disk.
func (z *Zip) Blob() oci.Blob {
	return oci.Blob{
		Descriptor: oci.ModuleLayerDescriptor(z.Digest, z.Size),
		Open:       func() (io.ReadCloser, error) { return localfile.OpenRegular(z.Path) },
	}
}

// Remove deletes the zip when Pack created it; a zip given by the
// user is left alone.
func (z *Zip) Remove() error {
	if z == nil || !z.temp {
		return nil
	}
	return os.Remove(z.Path)
}

// moduleFile is one file to pack.
type moduleFile struct {
	name  string // slash-separated entry name
	path  string // file to read (symlinks already resolved)
	size  int64
	exec  bool
	stamp fileStamp
}

// Pack packs the module directory dir into a deterministic zip in a
// temporary file, hashing it as it is written. It leaves out .git and
// .terraform directories, *.tfstate* files and whatever .terraformignore
// lists; follows symlinks that resolve inside dir and refuses those that
// point outside it.
func Pack(ctx context.Context, dir string, opts Options) (*Zip, error) {
	root, files, names, err := moduleFiles(ctx, dir, opts.AllowNoRoot)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(opts.TempDir, "oci-tofu-module-*.zip")
	if err != nil {
		return nil, err
	}
	z := &Zip{Path: tmp.Name(), Files: names, temp: true}
	h := sha256.New()
	var out io.Writer = tmp
	if opts.Charge != nil {
		out = &chargedWriter{w: tmp, charge: opts.Charge}
	}
	cw := &countingWriter{w: io.MultiWriter(out, h)}
	sums, err := writeModuleZip(ctx, cw, files, opts.Concurrency)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	if cw.n > MaxSize {
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("%s packs to a zip of %d bytes, more than the %d bytes a module package may have (oci-tofu pull module refuses it too)", dir, cw.n, int64(MaxSize))
	}
	z.Digest = digest.NewDigest(digest.SHA256, h)
	z.Size = cw.n
	z.Tree = treeDigest(files, sums)
	opts.Cache.storeStamps(root, files, sums)
	opts.Cache.Store(z)
	return z, nil
}

// Write writes the deterministic zip of the module directory dir to
// w and returns its entries. Pack is this plus a temporary file.
func Write(ctx context.Context, w io.Writer, dir string, opts Options) ([]string, error) {
	_, files, names, err := moduleFiles(ctx, dir, opts.AllowNoRoot)
	if err != nil {
		return nil, err
	}
	_, err = writeModuleZip(ctx, w, files, opts.Concurrency)
	return names, err
}

// moduleFiles collects the files a module directory packs to and checks
// its root, returning the files and their entry names.
func moduleFiles(ctx context.Context, dir string, allowNoRoot bool) (root string, files []moduleFile, names []string, err error) {
	root, files, err = collectModuleFiles(ctx, dir)
	if err != nil {
		return "", nil, nil, err
	}
	names = make([]string, len(files))
	for i, f := range files {
		names[i] = f.name
	}
	if err := checkModuleRoot(names, allowNoRoot); err != nil {
		return "", nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	return root, files, names, nil
}

// chargedWriter tells charge the size of each write before making it.
type chargedWriter struct {
	w      io.Writer
	charge func(n int64) error
}

func (c *chargedWriter) Write(p []byte) (int, error) {
	if err := c.charge(int64(len(p))); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Entries of at most inlineLimit bytes are compressed in parallel into
// memory (up to inflightLimit bytes at a time) and written with their final
// sizes; larger ones are streamed. Both ways are deterministic.
const (
	inlineLimit   = 8 << 20
	inflightLimit = 64 << 20
)

// dosDate1980 is 1980-01-01 in MS-DOS date format, the earliest zip date;
// the time field is 00:00:00. Set directly (not through Modified) so that no
// extended-timestamp extra field is written.
const dosDate1980 = 1<<5 | 1

func moduleHeader(f moduleFile) *zip.FileHeader {
	fh := &zip.FileHeader{Name: f.name, Method: zip.Deflate}
	//lint:ignore SA1019 set directly so that no extended-timestamp field is written (see dosDate1980)
	fh.ModifiedDate = dosDate1980
	//lint:ignore SA1019 as above
	fh.ModifiedTime = 0
	if f.exec {
		fh.SetMode(0o755)
	} else {
		fh.SetMode(0o644)
	}
	return fh
}

type compressed struct {
	fh   *zip.FileHeader
	data []byte
	sum  [sha256.Size]byte
	err  error
}

var flatePool = sync.Pool{New: func() any {
	fw, _ := flate.NewWriter(io.Discard, flate.DefaultCompression)
	return fw
}}

// compressFile reads a small file and deflates it, storing it instead when
// deflate would not make it smaller.
func compressFile(ctx context.Context, f moduleFile) compressed {
	fh := moduleHeader(f)
	raw, err := readSmall(ctx, f)
	if err != nil {
		return compressed{err: err}
	}
	sum := sha256.Sum256(raw)
	fh.CRC32 = crc32.ChecksumIEEE(raw)
	fh.UncompressedSize64 = uint64(len(raw))
	if incompressible(raw) {
		fh.Method = zip.Store
		fh.CompressedSize64 = uint64(len(raw))
		return compressed{fh: fh, data: raw, sum: sum}
	}
	var buf bytes.Buffer
	buf.Grow(len(raw)/2 + 64)
	fw := flatePool.Get().(*flate.Writer)
	fw.Reset(&buf)
	_, err = fw.Write(raw)
	if err == nil {
		err = fw.Close()
	}
	flatePool.Put(fw)
	if err != nil {
		return compressed{err: err}
	}
	if buf.Len() >= len(raw) {
		fh.Method = zip.Store
		fh.CompressedSize64 = uint64(len(raw))
		return compressed{fh: fh, data: raw, sum: sum}
	}
	fh.CompressedSize64 = uint64(buf.Len())
	return compressed{fh: fh, data: buf.Bytes(), sum: sum}
}

// Files that start with sampleSize bytes deflate cannot shrink by a
// thirtieth (compressed media, archives, binaries) are stored without trying
// to deflate the rest: deflating random data costs much and saves nothing.
// The decision depends only on the content, so packing stays deterministic.
const sampleSize = 64 << 10

var samplePool = sync.Pool{New: func() any {
	fw, _ := flate.NewWriter(io.Discard, flate.BestSpeed)
	return fw
}}

func incompressible(data []byte) bool {
	if len(data) < 2*sampleSize {
		return false // small files are cheap: try them whole
	}
	sample := data[:sampleSize]
	cw := &countingWriter{w: io.Discard}
	fw := samplePool.Get().(*flate.Writer)
	fw.Reset(cw)
	fw.Write(sample)
	fw.Close()
	samplePool.Put(fw)
	return cw.n > int64(len(sample))-int64(len(sample))/30
}

func readSmall(ctx context.Context, f moduleFile) ([]byte, error) {
	r, err := localfile.OpenRegular(f.path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	raw, err := io.ReadAll(localfile.Reader(ctx, io.LimitReader(r, inlineLimit+1)))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", f.name, err)
	}
	if len(raw) > inlineLimit {
		return nil, fmt.Errorf("%s grew while it was being packed", f.name)
	}
	return raw, nil
}

// writeModuleZip writes the zip and returns each file's content sha256.
func writeModuleZip(ctx context.Context, w io.Writer, files []moduleFile, workers int) ([][sha256.Size]byte, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := startCompressing(ctx, files, workers)
	defer c.wait()
	sums := make([][sha256.Size]byte, len(files))
	zw := zip.NewWriter(w)
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var err error
		if f.size > inlineLimit {
			err = streamFile(ctx, zw, f, &sums[i])
		} else {
			err = c.writeCompressed(ctx, zw, i, &sums[i])
		}
		if err != nil {
			return nil, err
		}
	}
	return sums, zw.Close()
}

// compressor deflates the small files in parallel, in order of need and
// within a memory budget, while the writer consumes them one by one.
type compressor struct {
	files   []moduleFile
	results []chan compressed
	budget  *semaphore.Weighted
	wg      sync.WaitGroup
}

func startCompressing(ctx context.Context, files []moduleFile, workers int) *compressor {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	c := &compressor{files: files, results: make([]chan compressed, len(files)), budget: semaphore.NewWeighted(inflightLimit)}
	for i := range c.results {
		c.results[i] = make(chan compressed, 1)
	}
	c.wg.Add(1)
	go c.feed(ctx, make(chan struct{}, workers))
	return c
}

// feed starts one compression per small file, as the budget and the CPU
// slots allow.
func (c *compressor) feed(ctx context.Context, cpu chan struct{}) {
	defer c.wg.Done()
	for i, f := range c.files {
		if f.size > inlineLimit {
			continue // streamed by the writer
		}
		if err := c.budget.Acquire(ctx, f.size+1); err != nil {
			return
		}
		select {
		case cpu <- struct{}{}:
		case <-ctx.Done():
			c.budget.Release(f.size + 1)
			return
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.results[i] <- compressFile(ctx, f)
			<-cpu
		}()
	}
}

// writeCompressed writes file i's compressed entry once it is ready.
func (c *compressor) writeCompressed(ctx context.Context, zw *zip.Writer, i int, sum *[sha256.Size]byte) error {
	var r compressed
	select {
	case r = <-c.results[i]:
	case <-ctx.Done():
		return ctx.Err()
	}
	c.budget.Release(c.files[i].size + 1)
	if r.err != nil {
		return r.err
	}
	*sum = r.sum
	out, err := zw.CreateRaw(r.fh)
	if err != nil {
		return err
	}
	_, err = out.Write(r.data)
	return err
}

func (c *compressor) wait() { c.wg.Wait() }

func streamFile(ctx context.Context, zw *zip.Writer, f moduleFile, sum *[sha256.Size]byte) error {
	file, err := localfile.OpenRegular(f.path)
	if err != nil {
		return err
	}
	defer file.Close()
	r := localfile.Reader(ctx, io.LimitReader(file, f.size+1))
	head := make([]byte, 2*sampleSize)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF {
		return fmt.Errorf("reading %s: %w", f.name, err)
	}
	fh := moduleHeader(f)
	if incompressible(head[:n]) {
		fh.Method = zip.Store
	}
	out, err := zw.CreateHeader(fh)
	if err != nil {
		return err
	}
	h := sha256.New()
	copied, err := io.Copy(io.MultiWriter(out, h), io.MultiReader(bytes.NewReader(head[:n]), r))
	if err != nil {
		return fmt.Errorf("packing %s: %w", f.name, err)
	}
	if copied != f.size {
		return fmt.Errorf("%s changed size while it was being packed", f.name)
	}
	h.Sum(sum[:0])
	return nil
}
