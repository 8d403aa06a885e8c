package modulepkg

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
)

// Cache remembers which zip each module tree packed to, so that a
// re-push of an unchanged tree needs only a hashing pass, no compression.
// It holds small JSON records, never zips; losing it costs only time.
type Cache struct{ Dir string }

// DefaultCache is under the user's cache directory
// ($XDG_CACHE_HOME/oci-tofu/modules on Linux), or nil when there is none.
func DefaultCache() *Cache {
	d, err := os.UserCacheDir()
	if err != nil {
		return nil
	}
	return &Cache{Dir: filepath.Join(d, "oci-tofu", "modules")}
}

// fileStamp is what stat says about a file, to tell whether it changed.
type fileStamp struct {
	Size  int64  `json:"size"`
	Mtime int64  `json:"mtime"`
	Ctime int64  `json:"ctime"`
	Ino   uint64 `json:"ino"`
	ok    bool
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

func (c *Cache) stampFile(root string) string {
	return filepath.Join(c.Dir, "stamps", digest.FromString(root).Encoded()+".json")
}

func (c *Cache) loadStamps(root string) *stampRecord {
	if c == nil {
		return nil
	}
	b, err := localfile.ReadBounded(c.stampFile(root), 64<<20)
	if err != nil {
		return nil
	}
	var r stampRecord
	if json.Unmarshal(b, &r) != nil || r.Format != moduleZipFormat {
		return nil
	}
	return &r
}

func (c *Cache) storeStamps(root string, files []moduleFile, sums [][sha256.Size]byte) {
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
func (c *Cache) write(file string, b []byte) {
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
func (c *Cache) Lookup(tree digest.Digest) (digest.Digest, int64, bool) {
	if c == nil || tree.Validate() != nil {
		return "", 0, false
	}
	b, err := localfile.ReadBounded(filepath.Join(c.Dir, tree.Encoded()+".json"), 4096)
	if err != nil {
		return "", 0, false
	}
	var r moduleCacheRecord
	if json.Unmarshal(b, &r) != nil || r.Zip.Validate() != nil || r.Zip.Algorithm() != digest.SHA256 || r.Size <= 0 {
		return "", 0, false
	}
	return r.Zip, r.Size, true
}

// Store records what z's tree packed to; failures are ignored (it is a cache).
func (c *Cache) Store(z *Zip) {
	if c == nil || z == nil || z.Tree == "" {
		return
	}
	b, _ := json.Marshal(moduleCacheRecord{Zip: z.Digest, Size: z.Size})
	c.write(filepath.Join(c.Dir, z.Tree.Encoded()+".json"), b)
}
