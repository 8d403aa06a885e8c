package modulepkg_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/oci"
)

// A directory is packed and pushed; pushed again unchanged it is found in
// the cache and nothing is packed or written; its zip pushed as a file is
// checked and up to date.
func TestPrepareAndPush(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte("output \"x\" { value = 1 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := oci.ParseReference(oci.LayoutPrefix + filepath.Join(t.TempDir(), "modules", "x"))
	if err != nil {
		t.Fatal(err)
	}
	target := modulepkg.Target{Client: client, Ref: ref, Tags: []string{"1.0.0", "latest"}}
	opts := modulepkg.Options{Cache: &modulepkg.Cache{Dir: t.TempDir()}}

	push := func(source string, want modulepkg.How) (*modulepkg.Package, oci.PushResult) {
		t.Helper()
		pkg, err := modulepkg.Prepare(ctx, source, target, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer pkg.Remove()
		if pkg.How != want || pkg.Files != 1 || pkg.Size <= 0 || pkg.Source != source {
			t.Errorf("prepared %s: %+v, want %s", source, pkg, want)
		}
		res, err := pkg.Push(ctx, target, oci.PushOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pkg, res
	}
	first, res := push(dir, modulepkg.Packed)
	if res.UpToDate || res.Uploaded == 0 {
		t.Errorf("first push: %+v", res)
	}
	again, res2 := push(dir, modulepkg.Unchanged)
	if !res2.UpToDate || res2.Root.Digest != res.Root.Digest || again.Digest != first.Digest {
		t.Errorf("unchanged push: %+v (%s), first %s", res2, again.Digest, res.Root.Digest)
	}

	// The same zip, given as a file, is checked and already there.
	zipFile := filepath.Join(t.TempDir(), "module.zip")
	f, err := os.Create(zipFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := modulepkg.Write(ctx, f, dir, modulepkg.Options{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	checked, res3 := push(zipFile, modulepkg.Checked)
	if checked.Digest != first.Digest || !res3.UpToDate {
		t.Errorf("zip push: %+v %+v", checked, res3)
	}
	if _, err := os.Stat(zipFile); err != nil {
		t.Errorf("the user's zip was removed: %v", err)
	}
}

// A source that does not exist is refused before the repository is
// created.
func TestPrepareMissingSource(t *testing.T) {
	client, _ := oci.NewClient(oci.Options{})
	layout := filepath.Join(t.TempDir(), "repo")
	ref, _ := oci.ParseReference(oci.LayoutPrefix + layout)
	_, err := modulepkg.Prepare(context.Background(), filepath.Join(t.TempDir(), "nosuch"), modulepkg.Target{Client: client, Ref: ref, Tags: []string{"1.0.0"}}, modulepkg.Options{})
	if !os.IsNotExist(err) {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(layout); !os.IsNotExist(err) {
		t.Errorf("the layout was created: %v", err)
	}
}

// A module version is written once: other content under an existing
// version tag is refused, naming both digests, and the tags stay where
// they were, unless Replace; tags that are not versions (latest) move.
func TestPushModuleVersionIsWrittenOnce(t *testing.T) {
	ctx := context.Background()
	client, _ := oci.NewClient(oci.Options{})
	ref, _ := oci.ParseReference(oci.LayoutPrefix + filepath.Join(t.TempDir(), "modules", "x"))
	module := func(value string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte("output \"x\" { value = "+value+" }\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	push := func(dir string, tags []string, opts oci.PushOptions) (oci.PushResult, error) {
		t.Helper()
		target := modulepkg.Target{Client: client, Ref: ref, Tags: tags}
		pkg, err := modulepkg.Prepare(ctx, dir, target, modulepkg.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer pkg.Remove()
		return pkg.Push(ctx, target, opts)
	}
	first, err := push(module("1"), []string{"1.4.0", "latest"}, oci.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := module("2")
	_, err = push(other, []string{"1.4.0", "latest"}, oci.PushOptions{})
	if !errors.Is(err, oci.ErrVersionExists) || !strings.Contains(err.Error(), first.Root.Digest.String()) || !strings.Contains(err.Error(), "this push is sha256:") {
		t.Fatalf("other content under 1.4.0: %v", err)
	}
	repo, _ := client.OpenReadOnly(ctx, ref)
	held, _ := oci.CurrentTags(ctx, repo, []string{"1.4.0", "latest"})
	if !held.AllHold(first.Root.Digest) {
		t.Fatalf("a refused push moved tags: %v", held)
	}
	// latest is not a version: a new version moves it.
	second, err := push(other, []string{"1.5.0", "latest"}, oci.PushOptions{})
	if err != nil || second.Root.Digest == first.Root.Digest {
		t.Fatalf("a new version: %+v %v", second, err)
	}
	// --replace overwrites the version.
	res, err := push(other, []string{"1.4.0"}, oci.PushOptions{Replace: true})
	if err != nil || res.Root.Digest != second.Root.Digest {
		t.Fatalf("replace: %+v %v", res, err)
	}
}
