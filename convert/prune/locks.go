package prune

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// LockFileName is the dependency lock file tofu init writes.
const LockFileName = ".terraform.lock.hcl"

// Locked is one provider version a lock file pins.
type Locked struct {
	File     string
	Provider names.Provider
	// Tag is the version's tag (1.0.0+x is 1.0.0_x).
	Tag string
}

// ReadLockFiles reads every .terraform.lock.hcl under dirs, recursively,
// skipping .terraform directories (tofu's provider and module caches
// hold lock files of others) and symbolic links to directories.
func ReadLockFiles(dirs []string) ([]Locked, error) {
	var out []Locked
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case d.IsDir() && d.Name() == ".terraform":
				return filepath.SkipDir
			case d.IsDir() || d.Name() != LockFileName:
				return nil
			}
			locked, err := readLockFile(path)
			out = append(out, locked...)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("--keep-locked %s: %w", dir, err)
		}
	}
	return out, nil
}

// readLockFile reads the versions one lock file pins. A version or
// address tofu would not accept fails the read: pruning on a lock file
// half understood could delete what it pins.
func readLockFile(path string) ([]Locked, error) {
	lf, err := lockfile.Read(path)
	if err != nil {
		return nil, err
	}
	out := make([]Locked, 0, len(lf.Providers))
	for _, p := range lf.Providers {
		addr, err := names.ParseProvider(p.Address)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		v, err := names.ParseVersionLoose(p.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: provider %s: %w", path, p.Address, err)
		}
		out = append(out, Locked{File: path, Provider: addr, Tag: names.TagForVersion(v)})
	}
	return out, nil
}

// LockPins are the versions lock files pin, by repository and tag.
type LockPins map[[2]string][]string

// NewLockPins pins each locked version in the repositories (host/path)
// repositoriesOf says its provider is stored in.
func NewLockPins(locked []Locked, repositoriesOf func(names.Provider) []string) LockPins {
	pins := LockPins{}
	for _, l := range locked {
		for _, repo := range repositoriesOf(l.Provider) {
			k := [2]string{repo, l.Tag}
			if !slices.Contains(pins[k], l.File) {
				pins[k] = append(pins[k], l.File)
			}
		}
	}
	return pins
}

// PinnedBy is the lock files pinning version in repository.
func (p LockPins) PinnedBy(repository, version string) []string {
	return p[[2]string{repository, version}]
}
