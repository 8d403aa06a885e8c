package convert

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Module packages are zips whose root is the module package root
// (REFERENCE §2). PackModule makes them reproducibly: entries sorted by
// name, every timestamp 1980-01-01 00:00, permissions 0644 or 0755, no
// directory entries, no extra fields, so the same tree always gives the same
// bytes and hence the same OCI digest.

// ModuleRootSuffixes are the file name endings that make a directory an
// OpenTofu module.
var ModuleRootSuffixes = []string{".tf", ".tofu", ".tf.json", ".tofu.json"}

// Limits on module packages, packed or unpacked.
const (
	// MaxModuleFiles bounds the number of files in a module package.
	MaxModuleFiles = 100_000
	// DefaultMaxModuleSize bounds a module package's unpacked size unless
	// the caller chooses another bound.
	DefaultMaxModuleSize = 1 << 30
)

// IgnoreFileName is read from a module's root for extra exclusions.
const IgnoreFileName = ".terraformignore"

// PackModuleOptions tune PackModule.
type PackModuleOptions struct {
	// AllowNoRoot accepts a package without a .tf/.tofu/.tf.json/.tofu.json
	// file at its root (e.g. a package of several modules, each consumed
	// with //subdir).
	AllowNoRoot bool
	// TempDir receives the zip (default os.TempDir()).
	TempDir string
	// Concurrency bounds parallel compression (default GOMAXPROCS).
	Concurrency int
	// Cache, when set, records what trees pack to and the files' hashes,
	// so that an unchanged tree is recognised quickly (HashModuleTree).
	Cache *ModuleCache
}

// ModuleZip is a checked module package zip on disk.
type ModuleZip struct {
	// Path of the zip. For PackModule it is a temporary file that Remove
	// deletes.
	Path   string
	Digest digest.Digest
	Size   int64
	// Files are the zip's file entries, sorted.
	Files []string
	// Tree is the packed tree's content digest (see HashModuleTree); empty
	// for a zip given by the user.
	Tree digest.Digest
	temp bool
}

// Blob returns the zip as an OCI layer blob (archive/zip), streamed from disk.
func (z *ModuleZip) Blob() oci.Blob {
	return oci.Blob{
		Descriptor: oci.ModuleLayerDescriptor(z.Digest, z.Size),
		Open:       func() (io.ReadCloser, error) { return os.Open(z.Path) },
	}
}

// Remove deletes the zip when PackModule created it; a zip given by the
// user is left alone.
func (z *ModuleZip) Remove() error {
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

// PackModule packs the module directory dir into a deterministic zip in a
// temporary file, hashing it as it is written. It leaves out .git and
// .terraform directories, *.tfstate* files and whatever .terraformignore
// lists; follows symlinks that resolve inside dir and refuses those that
// point outside it.
func PackModule(ctx context.Context, dir string, opts PackModuleOptions) (*ModuleZip, error) {
	root, files, names, err := moduleFiles(dir, opts.AllowNoRoot)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(opts.TempDir, "oci-tofu-module-*.zip")
	if err != nil {
		return nil, err
	}
	z := &ModuleZip{Path: tmp.Name(), Files: names, temp: true}
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(tmp, h)}
	sums, err := writeModuleZip(ctx, cw, files, opts.Concurrency)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return nil, err
	}
	z.Digest = digest.NewDigest(digest.SHA256, h)
	z.Size = cw.n
	z.Tree = treeDigest(files, sums)
	opts.Cache.storeStamps(root, files, sums)
	opts.Cache.Store(z)
	return z, nil
}

// WriteModuleZip writes the deterministic zip of the module directory dir to
// w and returns its entries. PackModule is this plus a temporary file.
func WriteModuleZip(ctx context.Context, w io.Writer, dir string, opts PackModuleOptions) ([]string, error) {
	_, files, names, err := moduleFiles(dir, opts.AllowNoRoot)
	if err != nil {
		return nil, err
	}
	_, err = writeModuleZip(ctx, w, files, opts.Concurrency)
	return names, err
}

// moduleFiles collects the files a module directory packs to and checks
// its root, returning the files and their entry names.
func moduleFiles(dir string, allowNoRoot bool) (root string, files []moduleFile, names []string, err error) {
	root, files, err = collectModuleFiles(dir)
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

// moduleZipFormat names the packing rules and the compressor; it is part
// of every tree digest, so a packer that would produce other bytes for the
// same tree never trusts an earlier packer's result.
var moduleZipFormat = "oci-tofu module zip v1, " + runtime.Version()

// HashModuleTree computes the content digest of what PackModule would pack
// from dir (same files, exclusions and checks) without compressing
// anything: sha256 over the packer format and, per file in order, its
// content's sha256, its mode and its name. Equal tree digests mean
// byte-identical zips, so a re-push can find its earlier result by tree
// digest (ModuleCache) and skip packing.
//
// With opts.Cache, files whose size, times, inode and mode are those
// recorded when they were last hashed are not read again (as git's index
// does; the change time cannot be set back, so an edit is always seen).
func HashModuleTree(ctx context.Context, dir string, opts PackModuleOptions) (digest.Digest, []string, error) {
	root, files, names, err := moduleFiles(dir, opts.AllowNoRoot)
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
			r, err := os.Open(f.path)
			if err != nil {
				return err
			}
			defer r.Close()
			h := sha256.New()
			if _, err := io.Copy(h, r); err != nil {
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

// ModuleCache remembers which zip each module tree packed to, so that a
// re-push of an unchanged tree needs only a hashing pass, no compression.
// It holds small JSON records, never zips; losing it costs only time.
type ModuleCache struct{ Dir string }

// DefaultModuleCache is under the user's cache directory
// ($XDG_CACHE_HOME/oci-tofu/modules on Linux), or nil when there is none.
func DefaultModuleCache() *ModuleCache {
	d, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	return &ModuleCache{Dir: filepath.Join(d, "oci-tofu", "modules")}
}

// fileStamp is what stat says about a file, to tell whether it changed.
type fileStamp struct {
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
	Ino   uint64 `json:"ino"`
	ok    bool
}

// stampOf reads size, times and inode. The change time and inode live in
// the platform's stat structure (Ctim on Linux, Ctimespec on BSDs and
// macOS), read by field name so that this file builds everywhere; where
// they are missing (Windows) files are always hashed.
func stampOf(fi fs.FileInfo) fileStamp {
	st := fileStamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	v := reflect.ValueOf(fi.Sys())
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return st
	}
	v = v.Elem()
	ino := v.FieldByName("Ino")
	var ct reflect.Value
	for _, n := range []string{"Ctim", "Ctimespec"} {
		if ct = v.FieldByName(n); ct.IsValid() {
			break
		}
	}
	if !ino.IsValid() || !ct.IsValid() || ct.Kind() != reflect.Struct {
		return st
	}
	sec, nsec := ct.FieldByName("Sec"), ct.FieldByName("Nsec")
	if !sec.IsValid() || !nsec.IsValid() || !sec.CanInt() || !nsec.CanInt() {
		return st
	}
	switch {
	case ino.CanUint():
		st.Ino = ino.Uint()
	case ino.CanInt():
		st.Ino = uint64(ino.Int())
	default:
		return st
	}
	st.Ctime = sec.Int()*1e9 + nsec.Int()
	st.ok = true
	return st
}

type stampRecord struct {
	Format  string                `json:"format"`
	Written int64                 `json:"written"`
	Files   map[string]stampEntry `json:"files"`
}

type stampEntry struct {
	fileStamp
	Exec bool   `json:"exec"`
	Sum  string `json:"sha256"`
}

// racyWindow: a file changed this close to when its hash was recorded
// might have changed again within the timestamp granularity; it is hashed.
const racyWindow = int64(2 * time.Second)

func (r *stampRecord) lookup(f moduleFile, sum *[sha256.Size]byte) bool {
	if r == nil || !f.stamp.ok {
		return false
	}
	e, ok := r.Files[f.name]
	if !ok || e.fileStamp.Size != f.stamp.Size || e.Mtime != f.stamp.Mtime || e.Ctime != f.stamp.Ctime || e.Ino != f.stamp.Ino || e.Exec != f.exec {
		return false
	}
	if f.stamp.Mtime >= r.Written-racyWindow || f.stamp.Ctime >= r.Written-racyWindow {
		return false
	}
	b, err := hex.DecodeString(e.Sum)
	if err != nil || len(b) != sha256.Size {
		return false
	}
	copy(sum[:], b)
	return true
}

func (c *ModuleCache) stampFile(root string) string {
	return filepath.Join(c.Dir, "stamps", digest.FromString(root).Encoded()+".json")
}

func (c *ModuleCache) loadStamps(root string) *stampRecord {
	if c == nil {
		return nil
	}
	f, err := os.Open(c.stampFile(root))
	if err != nil {
		return nil
	}
	defer f.Close()
	var r stampRecord
	if json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&r) != nil || r.Format != moduleZipFormat {
		return nil
	}
	return &r
}

func (c *ModuleCache) storeStamps(root string, files []moduleFile, sums [][sha256.Size]byte) {
	if c == nil {
		return
	}
	r := stampRecord{Format: moduleZipFormat, Written: time.Now().UnixNano(), Files: map[string]stampEntry{}}
	for i, f := range files {
		if f.stamp.ok {
			r.Files[f.name] = stampEntry{fileStamp: f.stamp, Exec: f.exec, Sum: hex.EncodeToString(sums[i][:])}
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	c.write(c.stampFile(root), b)
}

// write replaces a cache file atomically; failures are ignored.
func (c *ModuleCache) write(file string, b []byte) {
	if os.MkdirAll(filepath.Dir(file), 0o700) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil && cerr == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}

type moduleCacheRecord struct {
	Zip  digest.Digest `json:"zip"`
	Size int64         `json:"size"`
}

// Lookup returns the zip digest and size recorded for a tree digest.
func (c *ModuleCache) Lookup(tree digest.Digest) (digest.Digest, int64, bool) {
	if c == nil || tree.Validate() != nil {
		return "", 0, false
	}
	b, err := os.ReadFile(filepath.Join(c.Dir, tree.Encoded()+".json"))
	if err != nil || len(b) > 4096 {
		return "", 0, false
	}
	var r moduleCacheRecord
	if json.Unmarshal(b, &r) != nil || r.Zip.Validate() != nil || r.Zip.Algorithm() != digest.SHA256 || r.Size <= 0 {
		return "", 0, false
	}
	return r.Zip, r.Size, true
}

// Store records what z's tree packed to; failures are ignored (it is a cache).
func (c *ModuleCache) Store(z *ModuleZip) {
	if c == nil || z == nil || z.Tree == "" {
		return
	}
	b, _ := json.Marshal(moduleCacheRecord{Zip: z.Digest, Size: z.Size})
	c.write(filepath.Join(c.Dir, z.Tree.Encoded()+".json"), b)
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

// checkModuleRoot refuses an empty package, and one without a configuration
// file at its root unless allowNoRoot.
func checkModuleRoot(names []string, allowNoRoot bool) error {
	if len(names) == 0 {
		return errors.New("the module package is empty (after exclusions)")
	}
	if allowNoRoot {
		return nil
	}
	for _, n := range names {
		if strings.Contains(n, "/") {
			continue
		}
		for _, s := range ModuleRootSuffixes {
			if strings.HasSuffix(n, s) && len(n) > len(s) {
				return nil
			}
		}
	}
	return fmt.Errorf("no %s file at the package root, so it is not a module; pass --allow-no-root for a package whose modules are all in subdirectories (used as //subdir)",
		strings.Join(ModuleRootSuffixes, ", "))
}

// alwaysExcluded reports names left out whatever .terraformignore says.
func alwaysExcluded(name string, dir bool) bool {
	if name == ".git" || name == ".terraform" {
		return true
	}
	if !dir {
		ok, _ := path.Match("*.tfstate*", name)
		return ok
	}
	return false
}

type moduleWalker struct {
	root    string // resolved absolute root
	rules   *IgnoreRules
	negates bool
	files   []moduleFile
	active  map[string]bool // resolved directories being walked (cycle check)
}

func collectModuleFiles(dir string) (string, []moduleFile, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", nil, fmt.Errorf("module directory: %w", err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return "", nil, err
	}
	if !fi.IsDir() {
		return "", nil, fmt.Errorf("%s is not a directory", dir)
	}
	w := &moduleWalker{root: root, active: map[string]bool{}}
	if f, err := os.Open(filepath.Join(root, IgnoreFileName)); err == nil {
		w.rules, err = ParseIgnoreRules(io.LimitReader(f, 1<<20))
		f.Close()
		if err != nil {
			return "", nil, err
		}
		w.negates = w.rules.hasNegations()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", nil, fmt.Errorf("reading %s: %w", IgnoreFileName, err)
	}
	if err := w.walk(root, "", false); err != nil {
		return "", nil, err
	}
	sort.Slice(w.files, func(i, j int) bool { return w.files[i].name < w.files[j].name })
	return root, w.files, nil
}

// walk adds the files below realDir, whose entry name prefix is rel.
func (w *moduleWalker) walk(realDir, rel string, excluded bool) error {
	w.active[realDir] = true
	defer delete(w.active, realDir)
	entries, err := os.ReadDir(realDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		entry := name
		if rel != "" {
			entry = rel + "/" + name
		}
		if strings.ContainsAny(name, "\\\x00") {
			return fmt.Errorf("%s: file names with a backslash cannot be packed portably", entry)
		}
		p := filepath.Join(realDir, name)
		fi, err := e.Info()
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			// A link that is left out whatever it points to is not followed,
			// so a .terraform symlinked elsewhere or an ignored dangling link
			// does no harm.
			if w.excludedEitherWay(name, entry, excluded) {
				continue
			}
			if p, fi, err = w.resolve(p, entry); err != nil {
				return err
			}
		}
		isDir := fi.IsDir()
		if alwaysExcluded(name, isDir) {
			continue
		}
		ex := w.rules.Excluded(entry, isDir, excluded)
		switch {
		case isDir:
			if ex && !w.negates {
				continue
			}
			if w.active[p] {
				return fmt.Errorf("%s: symbolic link makes a cycle (it points to a directory that contains it)", entry)
			}
			if err := w.walk(p, entry, ex); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if ex {
				continue
			}
			if len(w.files) >= MaxModuleFiles {
				return fmt.Errorf("more than %d files: too many for a module package", MaxModuleFiles)
			}
			w.files = append(w.files, moduleFile{name: entry, path: p, size: fi.Size(), exec: fi.Mode()&0o111 != 0, stamp: stampOf(fi)})
		default:
			if ex {
				continue
			}
			return fmt.Errorf("%s is a %s, not a regular file or directory", entry, fi.Mode().Type())
		}
	}
	return nil
}

// excludedEitherWay reports whether an entry is left out both as a file
// and as a directory (for a directory, with no negation that could
// re-include something below it).
func (w *moduleWalker) excludedEitherWay(name, entry string, parentExcluded bool) bool {
	if alwaysExcluded(name, false) && alwaysExcluded(name, true) {
		return true
	}
	return !w.negates && w.rules.Excluded(entry, false, parentExcluded) && w.rules.Excluded(entry, true, parentExcluded)
}

// resolve follows a symbolic link, refusing one that leads outside the root.
func (w *moduleWalker) resolve(p, entry string) (string, fs.FileInfo, error) {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		dest, _ := os.Readlink(p)
		return "", nil, fmt.Errorf("symbolic link %s -> %s cannot be resolved: %w", entry, dest, err)
	}
	r, err := filepath.Rel(w.root, target)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		dest, _ := os.Readlink(p)
		return "", nil, fmt.Errorf("symbolic link %s -> %s points outside the module directory (to %s); copy the content in or remove the link", entry, dest, target)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return "", nil, err
	}
	return target, fi, nil
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
	fh.ModifiedDate = dosDate1980 //nolint:staticcheck // see dosDate1980
	fh.ModifiedTime = 0           //nolint:staticcheck
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
func compressFile(f moduleFile) compressed {
	fh := moduleHeader(f)
	raw, err := readSmall(f)
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

func readSmall(f moduleFile) ([]byte, error) {
	r, err := os.Open(f.path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	raw, err := io.ReadAll(io.LimitReader(r, inlineLimit+1))
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
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]chan compressed, len(files))
	for i := range results {
		results[i] = make(chan compressed, 1)
	}
	budget := semaphore.NewWeighted(inflightLimit)
	cpu := make(chan struct{}, workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	go func() {
		for i, f := range files {
			if f.size > inlineLimit {
				continue // streamed by the writer
			}
			if err := budget.Acquire(ctx, f.size+1); err != nil {
				return
			}
			select {
			case cpu <- struct{}{}:
			case <-ctx.Done():
				budget.Release(f.size + 1)
				return
			}
			wg.Add(1)
			go func(i int, f moduleFile) {
				defer wg.Done()
				results[i] <- compressFile(f)
				<-cpu
			}(i, f)
		}
	}()

	sums := make([][sha256.Size]byte, len(files))
	zw := zip.NewWriter(w)
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if f.size > inlineLimit {
			if err := streamFile(zw, f, &sums[i]); err != nil {
				return nil, err
			}
			continue
		}
		var c compressed
		select {
		case c = <-results[i]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		budget.Release(f.size + 1)
		if c.err != nil {
			return nil, c.err
		}
		sums[i] = c.sum
		out, err := zw.CreateRaw(c.fh)
		if err != nil {
			return nil, err
		}
		if _, err := out.Write(c.data); err != nil {
			return nil, err
		}
	}
	return sums, zw.Close()
}

func streamFile(zw *zip.Writer, f moduleFile, sum *[sha256.Size]byte) error {
	r, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer r.Close()
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
	if _, err := io.Copy(io.MultiWriter(out, h), io.MultiReader(bytes.NewReader(head[:n]), r)); err != nil {
		return fmt.Errorf("packing %s: %w", f.name, err)
	}
	h.Sum(sum[:0])
	return nil
}

// OpenModuleZip checks an existing module package zip (readable, safe entry
// names, no links or special files, bounded size, a module at its root
// unless allowNoRoot) and hashes it; the file is pushed byte for byte.
func OpenModuleZip(file string, allowNoRoot bool) (*ModuleZip, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", file)
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("%s is not a readable zip: %w", file, err)
	}
	names, err := CheckModuleZip(zr, DefaultMaxModuleSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := checkModuleRoot(names, allowNoRoot); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	sum, n, err := SHA256File(f)
	if err != nil {
		return nil, err
	}
	if n != fi.Size() {
		return nil, fmt.Errorf("%s changed while it was being read", file)
	}
	return &ModuleZip{Path: file, Digest: digest.NewDigestFromEncoded(digest.SHA256, sum), Size: n, Files: names}, nil
}

// CheckModuleZip checks every entry of a module package zip as unpacking
// will, and returns the file entries' cleaned names, sorted.
func CheckModuleZip(zr *zip.Reader, maxSize int64) ([]string, error) {
	if len(zr.File) > MaxModuleFiles {
		return nil, fmt.Errorf("zip has %d entries, more than the %d allowed", len(zr.File), MaxModuleFiles)
	}
	seen := map[string]bool{}
	var names []string
	var total uint64
	for _, f := range zr.File {
		name, dir, err := moduleEntryName(f)
		if err != nil {
			return nil, err
		}
		if dir {
			continue
		}
		if seen[name] {
			return nil, fmt.Errorf("zip holds %s twice", name)
		}
		seen[name] = true
		total += f.UncompressedSize64
		if total > uint64(maxSize) {
			return nil, fmt.Errorf("zip unpacks to more than %d bytes", maxSize)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

// moduleEntryName validates a zip entry the way a safe unpacker must: no
// absolute paths, no ".." anywhere (go-getter, which OpenTofu unpacks with,
// refuses those too), no backslashes, no symbolic links or other special
// files.
func moduleEntryName(f *zip.File) (name string, dir bool, err error) {
	n := f.Name
	if n == "" || strings.ContainsAny(n, "\\\x00") || strings.HasPrefix(n, "/") || filepath.IsAbs(n) || len(n) > 1 && n[1] == ':' {
		return "", false, fmt.Errorf("zip entry %q has an absolute or unsafe name", n)
	}
	for _, part := range strings.Split(strings.TrimSuffix(n, "/"), "/") {
		if part == ".." {
			return "", false, fmt.Errorf("zip entry %q would be unpacked outside its directory", n)
		}
	}
	c, err := cleanZipName(n)
	if err != nil {
		return "", false, err
	}
	mode := f.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		return "", false, fmt.Errorf("zip entry %q is a symbolic link; module packages may hold only files and directories", n)
	case mode.IsDir() || strings.HasSuffix(n, "/"):
		return c, true, nil
	case !mode.IsRegular():
		return "", false, fmt.Errorf("zip entry %q is a %s, not a regular file", n, mode.Type())
	}
	return c, false, nil
}

// UnpackModuleZip unpacks a module package zip into dir, which must not
// exist or be empty. It unpacks into a temporary directory next to dir and
// renames it into place only when every entry was written, refusing
// entries that would escape dir, links, and more than maxSize bytes in all
// (counted as written, not as declared). It returns the files written.
func UnpackModuleZip(zipFile, dir string, maxSize int64) ([]string, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxModuleSize
	}
	zr, err := zip.OpenReader(zipFile)
	if err != nil {
		return nil, fmt.Errorf("module package is not a readable zip: %w", err)
	}
	defer zr.Close()
	names, err := CheckModuleZip(&zr.Reader, maxSize)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, errors.New("module package holds no files")
	}
	if err := checkTargetDir(dir); err != nil {
		return nil, err
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".oci-tofu-*")
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	remaining := maxSize
	for _, f := range zr.File {
		name, isDir, err := moduleEntryName(f)
		if err != nil {
			return nil, err
		}
		target := filepath.Join(tmp, filepath.FromSlash(name))
		if isDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return nil, err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return nil, err
		}
		n, err := unpackFile(f, target, remaining)
		if err != nil {
			return nil, err
		}
		remaining -= n
	}
	// An empty directory may have appeared at dir meanwhile; only an empty
	// one is replaced.
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	done = true
	return names, nil
}

func checkTargetDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not empty; unpack into a new or empty directory", dir)
	}
	return nil
}

func unpackFile(f *zip.File, target string, remaining int64) (int64, error) {
	r, err := f.Open()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", f.Name, err)
	}
	defer r.Close()
	mode := os.FileMode(0o644)
	if f.Mode()&0o111 != 0 {
		mode = 0o755
	}
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(r, remaining+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("unpacking %s: %w", f.Name, err)
	}
	if n > remaining {
		return n, errors.New("module package unpacks to more than the size limit")
	}
	return n, nil
}
