package prune

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

const lockOf = `provider "registry.opentofu.org/acme/widgets" {
  version = "%s"
  hashes  = ["zh:0000000000000000000000000000000000000000000000000000000000000000"]
}
`

func writeLock(t *testing.T, path, version string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(fmt.Sprintf(lockOf, version)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Lock files are found at any depth, except under .terraform.
func TestReadLockFiles(t *testing.T) {
	dir := t.TempDir()
	writeLock(t, filepath.Join(dir, "prod", LockFileName), "1.0.0")
	writeLock(t, filepath.Join(dir, "stacks", "dev", "eu", LockFileName), "1.1.0+build.1")
	writeLock(t, filepath.Join(dir, "prod", ".terraform", "modules", "x", LockFileName), "0.1.0")
	writeLock(t, filepath.Join(dir, "prod", "not-a-lock.hcl"), "0.2.0")
	locked, err := ReadLockFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range locked {
		rel, _ := filepath.Rel(dir, l.File)
		got = append(got, rel+" "+l.Provider.String()+" "+l.Tag)
	}
	slices.Sort(got)
	want := []string{
		"prod/.terraform.lock.hcl registry.opentofu.org/acme/widgets 1.0.0",
		"stacks/dev/eu/.terraform.lock.hcl registry.opentofu.org/acme/widgets 1.1.0_build.1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("read %q, want %q", got, want)
	}
	if _, err := ReadLockFiles([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing directory was read without an error")
	}
}
