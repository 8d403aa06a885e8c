package tfconfig

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// DetectClient guesses which client a working directory belongs to, from
// the traces each leaves, and says what it went by:
//
//   - .terraform.lock.hcl: provider addresses on registry.terraform.io or
//     registry.opentofu.org, else the "terraform init"/"tofu init" header;
//   - .tofu or .tofu.json files, which only OpenTofu reads;
//   - the provider cache .terraform/providers/<default registry host>.
//
// With none of these it returns Tofu, "default".
func DetectClient(dir string) (Client, string) {
	if c, ok := clientFromLockFile(filepath.Join(dir, ".terraform.lock.hcl")); ok {
		return c, "the existing .terraform.lock.hcl"
	}
	if hasTofuFiles(dir) {
		return Tofu, ".tofu files"
	}
	providers := filepath.Join(dataDir(dir), "providers")
	for _, c := range []Client{Terraform, Tofu} {
		if fi, err := os.Stat(filepath.Join(providers, c.RegistryHost())); err == nil && fi.IsDir() {
			return c, "the provider cache in " + filepath.Base(dataDir(dir))
		}
	}
	return Tofu, "default"
}

var lockSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "provider", LabelNames: []string{"address"}},
	{Type: "module", LabelNames: []string{"path"}},
}}

// clientFromLockFile reads which client wrote a lock file.
func clientFromLockFile(path string) (Client, bool) {
	src, err := localfile.ReadBounded(path, MaxConfigFile)
	if err != nil {
		return "", false
	}
	if f, diags := hclparse.NewParser().ParseHCL(src, path); !diags.HasErrors() {
		content, _, _ := f.Body.PartialContent(lockSchema)
		for _, b := range content.Blocks {
			if b.Type != "provider" {
				continue
			}
			p, err := names.ParseProvider(b.Labels[0])
			if err != nil {
				continue
			}
			switch p.Hostname {
			case names.TerraformRegistryHost:
				return Terraform, true
			case names.OpenTofuRegistryHost:
				return Tofu, true
			}
		}
	}
	switch {
	case bytes.Contains(src, []byte(`maintained automatically by "terraform init"`)):
		return Terraform, true
	case bytes.Contains(src, []byte(`maintained automatically by "tofu init"`)):
		return Tofu, true
	}
	return "", false
}

func hasTofuFiles(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if ext := configExt(e.Name(), Tofu); !e.IsDir() && !ignoredFile(e.Name()) && (ext == ".tofu" || ext == ".tofu.json") {
			return true
		}
	}
	return false
}
