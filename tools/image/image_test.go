package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The same files give the same layer bytes, whatever order they come in;
// another mtime gives another layer. (e2e's TestImage checks whole builds.)
func TestBuildLayerIsReproducible(t *testing.T) {
	files := []file{rootFile("etc/b", 0o644, []byte("b")), rootFile("etc/a", 0o600, []byte("a")), dir("tmp", 0o777|os.ModeSticky, 0, 0)}
	reversed := []file{files[2], files[1], files[0]}
	at := time.Unix(1700000000, 0)
	first, err := buildLayer(files, at)
	if err != nil {
		t.Fatal(err)
	}
	second, err := buildLayer(reversed, at)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Blob, second.Blob) || first.DiffID != second.DiffID {
		t.Errorf("the same files in another order gave another layer: %s, %s", first.Desc.Digest, second.Desc.Digest)
	}
	later, err := buildLayer(files, at.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if later.Desc.Digest == first.Desc.Digest {
		t.Error("the mtime does not reach the layer")
	}
	names := layerNames(t, first.Blob)
	if want := "etc/ etc/a etc/b tmp/"; strings.Join(names, " ") != want {
		t.Errorf("entries %v, want %s", names, want)
	}
}

// layerNames lists a gzip-compressed tar layer's entry names in order.
func layerNames(t *testing.T, blob []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Header.Name != "" || !zr.Header.ModTime.IsZero() {
		t.Errorf("gzip header names %q at %v", zr.Header.Name, zr.Header.ModTime)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
}

// Paths that could escape the root, or collide, are refused.
func TestWithParentsRefusesUnsafePaths(t *testing.T) {
	for _, p := range []string{"", ".", "/etc/passwd", "../etc", "etc/../x", "etc//x", "etc/"} {
		if _, err := withParents([]file{rootFile(p, 0o644, nil)}); err == nil {
			t.Errorf("%q was accepted", p)
		}
	}
	if _, err := withParents([]file{rootFile("a", 0o644, nil), rootFile("a", 0o644, nil)}); err == nil {
		t.Error("a duplicate path was accepted")
	}
	if _, err := withParents([]file{rootFile("a", 0o644, nil), rootFile("a/b", 0o644, nil)}); err == nil {
		t.Error("a file below a regular file was accepted")
	}
}

// --out replaces an OCI layout, never another directory.
func TestWriteLayoutReplacesOnlyLayouts(t *testing.T) {
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	index, err := assembleIndex(metadata{Version: "v1"}, []platformImage{{Platform: supportedPlatforms["linux/amd64"], Manifest: blob{}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeLayout(other, "v1", index, nil); err == nil {
		t.Fatal("a directory that is not a layout was replaced")
	}
	if _, err := os.Stat(filepath.Join(other, "keep")); err != nil {
		t.Fatalf("its content is gone: %v", err)
	}
	layout := filepath.Join(t.TempDir(), "image")
	for range 2 {
		if err := writeLayout(layout, "v1", index, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(layout + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary directory is left behind: %v", err)
	}
}

// Tags must be valid OCI tags; SOURCE_DATE_EPOCH must be seconds.
func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--version", "v1.2.3", "--source-date-epoch", "1700000000"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Tag != "v1.2.3" || o.Meta.Created.Unix() != 1700000000 || len(o.Platforms) != 2 {
		t.Errorf("parsed %+v", o)
	}
	for _, args := range [][]string{
		{"--version", "v1.2.3+build"},
		{"--tag", ".hidden"},
		{"--source-date-epoch", "yesterday"},
		{"--platform", "linux/s390x"},
		{"--platform", "linux/amd64,linux/amd64"},
		{"stray"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%v was accepted", args)
		}
	}
}

// The image's CA bundle comes from the module go.mod pins, not from the
// build machine: the same bytes on every machine, every block a
// certificate; --ca-bundle is read only when given.
func TestPinnedCABundle(t *testing.T) {
	a, err := caBundle("")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pinnedCABundle()
	if n := countCertificates(a); n < 100 || !bytes.Equal(a, b) || bytes.Count(a, []byte("-----BEGIN CERTIFICATE-----")) != n {
		t.Fatalf("pinned bundle: %d certificates, deterministic %v", n, bytes.Equal(a, b))
	}
	if _, err := caBundle(filepath.Join(t.TempDir(), "nosuch.crt")); err == nil {
		t.Error("a missing --ca-bundle file was accepted")
	}
	o, err := parseFlags(nil)
	if err != nil || o.CABundle != "" {
		t.Errorf("the default reads %q (%v), want the pinned bundle", o.CABundle, err)
	}
}
