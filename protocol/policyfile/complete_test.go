package policyfile

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

const (
	// denyDefault denies every address but hello, and hello 2.0.0; the
	// default line comes last, as a file cut short would lose it.
	denyDefault = "provider \"example.com/test/hello\" {\n  name = \"hello-no-2\"\n  deny = [\"2.0.0\"]\n}\ndefault = \"deny\"\n"
	otherAddr   = "example.com/test/other"
)

// allowsOther says whether the policy in force allows other 1.0.0, an
// address no rule of these files matches: the default decides.
func allowsOther(f *File) bool {
	return f.Live().Current().Decide(names.KindProvider, otherAddr, "1.0.0").Allow
}

// A reload never takes a file that could be one cut short for a wider
// policy: an empty or comment-only file, or one that loses the default =
// "deny" line, is refused and the policy in force stays; a file that says
// what it means (default = "allow" or "deny", with or without rules) is
// taken. Open, at start-up, still takes an empty file as "allow".
func TestReloadRefusesAFileCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.hcl")
	write(t, path, denyDefault)
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if allows(f) || allowsOther(f) {
		t.Fatal("the initial policy allows hello 2.0.0 or other")
	}
	cut := denyDefault[:strings.Index(denyDefault, "default")]
	for i, bad := range []struct{ name, content, error string }{
		{"empty", "", "the file has no rules and does not write its default out"},
		{"only comments", "# being rewritten\n\n", "the file has no rules and does not write its default out"},
		{"cut before the default line", cut, `the policy in force has default = "deny" and the file does not write its default out`},
	} {
		write(t, path, bad.content)
		err := f.Reload("test")
		if err == nil || !strings.Contains(err.Error(), bad.error) || !strings.HasPrefix(err.Error(), path+": ") {
			t.Errorf("%s: Reload = %v, want an error naming the file and containing %q", bad.name, err, bad.error)
		}
		if st := f.Status(); allows(f) || allowsOther(f) || st.Current || st.Errors != uint64(i+1) || st.Reloads != 0 {
			t.Errorf("%s: the policy in force changed or the refusal is not in the status (allows hello 2.0.0 %v, other %v, %+v)", bad.name, allows(f), allowsOther(f), st)
		}
	}

	for _, good := range []struct {
		name, content      string
		hello200, other100 bool
	}{
		{"rules, default still deny", "default = \"deny\"\n" + cut, false, false},
		{"no rules, default deny written out", "default = \"deny\"\n", false, false},
		{"rules, default allow written out", cut + "default = \"allow\"\n", false, true},
		{"rules, default left implicit while allow is in force", cut, false, true},
		{"allow everything, written out", "default = \"allow\"\n", true, true},
	} {
		write(t, path, good.content)
		if err := f.Reload("test"); err != nil {
			t.Fatalf("%s: %v", good.name, err)
		}
		if allows(f) != good.hello200 || allowsOther(f) != good.other100 || !f.Status().Current {
			t.Errorf("%s: allows hello 2.0.0 %v, other 1.0.0 %v; want %v, %v", good.name, allows(f), allowsOther(f), good.hello200, good.other100)
		}
	}

	// Start-up is unchanged: an empty file is a valid policy allowing
	// everything (there is nothing in force to widen).
	write(t, path, "")
	g, err := Open(path, nil)
	if err != nil || !allows(g) || !allowsOther(g) {
		t.Errorf("Open(empty) = %v, allows %v %v; want the implicit allow", err, allows(g), allowsOther(g))
	}
}

// rewriteInPlace truncates the file and writes the parts into it, pausing
// between them: an editor or a script that rewrites a file in place.
func rewriteInPlace(t *testing.T, path string, pause time.Duration, parts ...string) {
	t.Helper()
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer w.Close()
	for i, part := range parts {
		if i > 0 {
			time.Sleep(pause)
		}
		if _, err := w.WriteString(part); err != nil {
			t.Error(err)
			return
		}
	}
}

// A reload (SIGHUP's) asked for while the file is being rewritten in
// place reads it once it is still: the half-written file — a complete,
// explicit allow-everything policy on its own — is never put in force.
func TestReloadWaitsForTheFileToBeStill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.hcl")
	write(t, path, deny200)
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := "default = \"allow\"\n"
	rest := []string{"provider \"example.com/test/hello\" {\n  name = \"still-no-2\"\n", "  deny = [\"2.0.0\"]\n}\n"}
	var wg sync.WaitGroup
	wg.Go(func() { rewriteInPlace(t, path, settle/5, append([]string{first}, rest...)...) })
	waitFor(t, "the first part written", func() bool {
		b, _ := os.ReadFile(path)
		return strings.HasPrefix(string(b), first)
	})
	err = f.Reload("SIGHUP")
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if allows(f) || f.Status().Reloads != 1 || !f.Live().Current().HasRule(names.KindProvider, "still-no-2") {
		t.Errorf("the reload took the file before it was still: allows hello 2.0.0 %v, %+v", allows(f), f.Status())
	}
}

// An in-place rewrite that pauses after truncating the file, longer than
// the watch's quiet time, never opens the gate: the watch reads the empty
// file and refuses it, then puts the rewritten file in force.
func TestWatchNeverOpensTheGateOnATruncatedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.hcl")
	write(t, path, deny200)
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	watch(t, f)
	var gateOpened atomic.Bool
	stop := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		for !gateOpened.Load() {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				gateOpened.Store(allows(f))
			}
		}
	})
	rewriteInPlace(t, path, 0) // truncated, and nothing written for a while
	waitFor(t, "the empty file read", func() bool { return f.Status().Errors == 1 || gateOpened.Load() })
	write(t, path, strings.Replace(deny200, "hello-no-2", "hello-no-2-rewritten", 1))
	waitFor(t, "the rewritten file in force", func() bool {
		return f.Live().Current().HasRule(names.KindProvider, "hello-no-2-rewritten")
	})
	close(stop)
	watcher.Wait()
	if gateOpened.Load() {
		t.Error("hello 2.0.0 was allowed while the file was empty")
	}
	if st := f.Status(); st.Reloads != 1 || !st.Current || st.Errors != 1 {
		t.Errorf("status after the rewrite: %+v, want the empty file's refusal and one reload", st)
	}
}
