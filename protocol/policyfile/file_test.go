package policyfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

const (
	allowAll  = "provider \"example.com/test/hello\" {\n  name = \"hello\"\n}\n"
	deny200   = "provider \"example.com/test/hello\" {\n  name = \"hello-no-2\"\n  deny = [\"2.0.0\"]\n}\n"
	broken    = "provider \"example.com/test/hello\" {\n  deny = [\"2.0.0\"\n}\n"
	helloAddr = "example.com/test/hello"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// allows says whether the policy in force allows hello 2.0.0.
func allows(f *File) bool {
	return f.Live().Current().Decide(names.KindProvider, helloAddr, "2.0.0").Allow
}

func TestOpenRefusesABrokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.hcl")
	write(t, path, broken)
	if _, err := Open(path, nil); err == nil || !strings.Contains(err.Error(), path+":3:1:") {
		t.Errorf("Open(broken) = %v, want an error with its line and column", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.hcl"), nil); err == nil || !strings.Contains(err.Error(), "reading the policy") {
		t.Errorf("Open(missing) = %v", err)
	}
}

// A reload puts a good file in force; a broken, missing or hostile one
// leaves the last good policy in force, with the error in the status;
// the fixed file is in force again.
func TestReloadKeepsTheLastGoodPolicy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.hcl")
	write(t, path, allowAll)
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !allows(f) || !f.Status().Current || f.Status().Rules != 1 {
		t.Fatalf("initial: allows=%v status %+v", allows(f), f.Status())
	}
	gen := f.Live().Generation()

	write(t, path, deny200)
	if err := f.Reload("test"); err != nil {
		t.Fatal(err)
	}
	st := f.Status()
	if allows(f) || st.Reloads != 1 || !st.Current || st.LastError != "" || f.Live().Generation() != gen+1 {
		t.Fatalf("after deny: allows=%v status %+v gen %d", allows(f), st, f.Live().Generation())
	}

	// The same content again is no new policy.
	if err := f.Reload("test"); err != nil || f.Live().Generation() != gen+1 || f.Status().Reloads != 1 {
		t.Fatalf("unchanged content: %v, gen %d, %+v", err, f.Live().Generation(), f.Status())
	}

	for i, bad := range []struct {
		name  string
		make  func()
		error string
	}{
		{"broken", func() { write(t, path, broken) }, path + ":3:1:"},
		{"invalid constraint", func() { write(t, path, "provider \"a/b\" {\n  versions = \">= banana\"\n}\n") }, path + ":2:14: invalid version constraint"},
		{"10 MB", func() { write(t, path, "# "+strings.Repeat("x", 10<<20)) }, "larger than 1048576 bytes"},
		{"100,000 rules", func() { write(t, path, strings.Repeat("tofu {}\n", 100000)) }, path + ":10001:1: the policy has 100000 rules"},
		{"missing", func() { os.Remove(path) }, "no such file"},
		{"a FIFO", func() {
			os.Remove(path)
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "a named pipe (FIFO), not a regular file"},
	} {
		bad.make()
		err := f.Reload("test")
		st := f.Status()
		if err == nil || !strings.Contains(err.Error(), bad.error) || st.LastError != err.Error() || st.Current || st.Errors != uint64(i+1) {
			t.Errorf("%s: Reload = %v, status %+v, want an error containing %q", bad.name, err, st, bad.error)
		}
		if allows(f) || st.Rules != 1 || f.Live().Generation() != gen+1 {
			t.Errorf("%s: the last good policy is not in force (allows 2.0.0: %v, status %+v)", bad.name, allows(f), st)
		}
	}

	os.Remove(path)
	write(t, path, allowAll)
	if err := f.Reload("test"); err != nil {
		t.Fatal(err)
	}
	if st := f.Status(); !allows(f) || !st.Current || st.LastError != "" || st.Reloads != 2 || st.Errors != 6 || st.LastErrorAt.IsZero() {
		t.Errorf("fixed: allows=%v status %+v", allows(f), st)
	}
}

// waitFor polls until cond holds; the bound only ends a test that would
// otherwise hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func watch(t *testing.T, f *File) {
	ctx, cancel := context.WithCancel(context.Background())
	wait, err := f.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		wait()
	})
}

// Editors write a new file and rename it over the old one.
func TestWatchSeesRenameWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.hcl")
	write(t, path, allowAll)
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	watch(t, f)
	renameWrite := func(content string) {
		write(t, path+".swp", content)
		if err := os.Rename(path+".swp", path); err != nil {
			t.Fatal(err)
		}
	}
	renameWrite(deny200)
	waitFor(t, "the rename-written policy in force", func() bool { return !allows(f) })
	renameWrite(broken)
	waitFor(t, "the broken file's error in the status", func() bool { return f.Status().Errors == 1 })
	if allows(f) || f.Status().Current {
		t.Errorf("the broken file changed the policy in force: %+v", f.Status())
	}
	// In-place writes are seen too.
	write(t, path, allowAll)
	waitFor(t, "the fixed file in force", func() bool { return allows(f) && f.Status().Current })
}

// Kubernetes mounts a ConfigMap key as policy.hcl -> ..data/policy.hcl,
// ..data -> ..<timestamp>, and updates it by making a new timestamped
// directory and renaming a new ..data link over the old one.
func TestWatchSeesConfigMapSwaps(t *testing.T) {
	dir := t.TempDir()
	version := func(name, content string) {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, name, "policy.hcl"), content)
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2026_01_01", allowAll)
	path := filepath.Join(dir, "policy.hcl")
	if err := os.Symlink("..data/policy.hcl", path); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	watch(t, f)
	version("..2026_01_02", deny200)
	waitFor(t, "the swapped ConfigMap's policy in force", func() bool { return !allows(f) })
	version("..2026_01_03", broken)
	waitFor(t, "the broken ConfigMap's error in the status", func() bool { return f.Status().Errors == 1 })
	if allows(f) {
		t.Error("a broken ConfigMap changed the policy in force")
	}
	version("..2026_01_04", allowAll)
	waitFor(t, "the fixed ConfigMap in force", func() bool { return allows(f) && f.Status().Current })
}

// Client blocks cannot appear in, or all vanish from, a file being
// served: whether clients are asked for tokens is decided at start.
// Changing the clients of a file that has some is an ordinary reload.
func TestReloadKeepsClientAuthenticationAsStarted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.hcl")
	client := func(name, token string) string {
		return "client \"" + name + "\" {\n  tokens = [\"" + policy.TokenHash(token) + "\"]\n}\n"
	}
	write(t, path, allowAll)
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, allowAll+client("a", "t1"))
	if err := f.Reload("test"); err == nil || !strings.Contains(err.Error(), "restart serve to start asking clients for tokens") || f.Live().Current().HasClients() {
		t.Fatalf("clients added: %v", err)
	}

	write(t, path, deny200+client("a", "t1"))
	g, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, deny200+client("a", "t2")+client("b", "t3"))
	if err := g.Reload("test"); err != nil || len(g.Live().Current().ClientNames()) != 2 {
		t.Fatalf("clients changed: %v", err)
	}
	write(t, path, deny200)
	if err := g.Reload("test"); err == nil || !strings.Contains(err.Error(), "restart serve to stop asking clients for tokens") || !g.Live().Current().HasClients() {
		t.Fatalf("clients removed: %v", err)
	}
}
