package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// StartOriginVerbatim is StartOrigin for releases whose SHA256SUMS or
// signature are odd on purpose: the files are served byte for byte, and
// each download document's "shasum" is the zip's real digest, as a
// registry computes it, instead of what SHA256SUMS says. Clients then
// decide about SHA256SUMS and signature themselves.
func StartOriginVerbatim(t testing.TB, releases []OriginRelease) *Origin {
	t.Helper()
	o := StartOrigin(t, releases)
	if err := o.shasumsFromZips(); err != nil {
		t.Fatal(err)
	}
	return o
}

// shasumsFromZips rewrites every download document's shasum with the
// sha256 of the file its download_url names.
func (o *Origin) shasumsFromZips() error {
	downloads := filepath.Join(o.Root, "v1", "providers")
	return filepath.WalkDir(downloads, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(filepath.ToSlash(p), "/download/") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			return err
		}
		url, _ := doc["download_url"].(string)
		zip, err := os.ReadFile(filepath.Join(o.Root, filepath.FromSlash(path.Clean("/"+url))))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(zip)
		doc["shasum"] = hex.EncodeToString(sum[:])
		if b, err = json.Marshal(doc); err != nil {
			return err
		}
		return os.WriteFile(p, b, 0o644)
	})
}
