package tfconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	goversion "github.com/hashicorp/go-version"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
)

// manifestRecord is one module of .terraform/modules/modules.json, where
// `tofu init`, `tofu get` (and Terraform's) record the modules they
// installed.
type manifestRecord struct {
	Key     string `json:"Key"`
	Source  string `json:"Source"`
	Version string `json:"Version,omitempty"`
	Dir     string `json:"Dir"`
}

// manifest maps module keys ("a.b" for module.a.module.b) to records.
type manifest map[string]manifestRecord

// dataDir is the clients' working directory for a root module: .terraform,
// or TF_DATA_DIR (relative to the root module) when set.
func dataDir(root string) string {
	if d := os.Getenv("TF_DATA_DIR"); d != "" {
		if filepath.IsAbs(d) {
			return d
		}
		return filepath.Join(root, d)
	}
	return filepath.Join(root, ".terraform")
}

// readManifest reads the modules manifest of a root module; a missing file
// is an empty manifest, as for the clients.
func readManifest(root string) (manifest, error) {
	path := filepath.Join(dataDir(root), "modules", "modules.json")
	src, err := localfile.ReadBounded(path, MaxConfigFile)
	if errors.Is(err, fs.ErrNotExist) {
		return manifest{}, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Modules []manifestRecord `json:"Modules"`
	}
	if len(src) > 0 {
		if err := json.Unmarshal(src, &doc); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	m := manifest{}
	for _, r := range doc.Modules {
		if _, dup := m[r.Key]; dup {
			return nil, fmt.Errorf("reading %s: two records for module %q", path, r.Key)
		}
		if r.Version != "" {
			if _, err := goversion.NewVersion(r.Version); err != nil {
				return nil, fmt.Errorf("reading %s: invalid version %q for %s: %w", path, r.Version, r.Key, err)
			}
		}
		m[r.Key] = r
	}
	return m, nil
}

// dir is where a record's module lives: Dir is relative to the root
// module, where the client ran.
func (r manifestRecord) dir(root string) string {
	d := filepath.FromSlash(r.Dir)
	if filepath.IsAbs(d) {
		return d
	}
	return filepath.Join(root, d)
}
