package convert

import (
	"fmt"
	"os"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// LockedProvider is one provider block of a .terraform.lock.hcl file.
type LockedProvider struct {
	Address     string   `hcl:"address,label"`
	Version     string   `hcl:"version"`
	Constraints string   `hcl:"constraints,optional"`
	Hashes      []string `hcl:"hashes,optional"`
}

// LockFile is the provider part of a dependency lock file.
type LockFile struct {
	Providers []LockedProvider `hcl:"provider,block"`
	Remain    hcl.Body         `hcl:",remain"`
}

// ReadLockFile parses a .terraform.lock.hcl file.
func ReadLockFile(path string) (*LockFile, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, diags := hclparse.NewParser().ParseHCL(src, path)
	if diags.HasErrors() {
		return nil, fmt.Errorf("parsing %s: %s", path, diags.Error())
	}
	var lf LockFile
	if diags := gohcl.DecodeBody(f.Body, nil, &lf); diags.HasErrors() {
		return nil, fmt.Errorf("reading %s: %s", path, diags.Error())
	}
	sort.Slice(lf.Providers, func(i, j int) bool { return lf.Providers[i].Address < lf.Providers[j].Address })
	return &lf, nil
}

// Provider returns the entry for a provider address, or nil.
func (lf *LockFile) Provider(address string) *LockedProvider {
	for i := range lf.Providers {
		if lf.Providers[i].Address == address {
			return &lf.Providers[i]
		}
	}
	return nil
}
