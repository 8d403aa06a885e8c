package providerdir_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/convert/providerdir"
	"github.com/oci-tofu/oci-tofu/oci"
)

// An unpacked version (HOST/NS/TYPE/VERSION/OS_ARCH/) is packed into zips
// named as the release's packages, whatever the temporary files are
// called, and pushes; Close removes the temporary zips.
func TestReadUnpackedLayout(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	for _, p := range []string{"linux_amd64", "darwin_arm64"} {
		dir := filepath.Join(root, "example.com", "acme", "widget", "1.2.0", p)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "terraform-provider-widget_v1.2.0"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	releases, err := providerdir.Read(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if len(releases) != 1 || releases[0].Provider.String() != "example.com/acme/widget" || len(releases[0].Release.Packages) != 2 {
		t.Fatalf("%+v", releases)
	}
	r := releases[0]
	for _, p := range r.Release.Packages {
		if want := "terraform-provider-widget_1.2.0_" + p.Platform.String() + ".zip"; p.Filename != want {
			t.Errorf("package named %q, want %q", p.Filename, want)
		}
	}
	repo, err := orasoci.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Release.Push(ctx, repo, oci.PushOptions{}); err != nil {
		t.Fatalf("pushing the packed unpacked layout: %v", err)
	}
	tmp := r.Release.Packages[0].Path
	r.Close()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary zip %s left behind: %v", tmp, err)
	}
}
