package held_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/held"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// heldHello is the held source of an OCI layout holding the signed hello
// fixture's 1.0.0 under test/hello, as `oci-tofu push provider` writes it.
func heldHello(t *testing.T) (*held.Providers, names.Provider) {
	t.Helper()
	dir := t.TempDir()
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Layout: true, Repository: dir + "/test/hello"})
	if err != nil {
		t.Fatal(err)
	}
	seed.Push(t, repo, seed.HelloArtifact(t, "1.0.0"), "1.0.0")
	tpl, err := repotemplate.ParseProviderTemplate("oci-layout:" + dir + "/${namespace}/${type}")
	if err != nil {
		t.Fatal(err)
	}
	h := &held.Providers{Store: store.New(store.Options{Client: client}), Mappings: store.ProviderMappings{{Template: tpl, Label: "test"}},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return h, names.Provider{Hostname: "example.com", Namespace: "test", Type: "hello"}
}

func TestHeldReadsWhatTheRegistryHolds(t *testing.T) {
	ctx := context.Background()
	h, p := heldHello(t)
	l, err := h.ProviderVersions(ctx, p, names.ViaMirror, source.ListOptions{Need: source.NeedSummary})
	if err != nil || len(l.Versions) != 1 || !l.Versions[0].Stored || l.Versions[0].Version.String() != "1.0.0" {
		t.Fatalf("listing %+v, %v: want the stored 1.0.0", l.Versions, err)
	}
	root, err := h.ResolveProvider(ctx, p, names.MustParseVersion("1.0.0"), names.ViaMirror)
	if err != nil || root.Root == nil || root.Pulled != nil || root.Root.Digest != root.Root.Index.Index.Digest {
		t.Fatalf("resolving 1.0.0: %+v, %v: want its stored index as root and pin", root, err)
	}
	rel, err := h.ReadProvider(ctx, root, source.NeedPackages|source.NeedChecksums)
	if err != nil {
		t.Fatal(err)
	}
	if len(rel.Packages) != len(rel.Platforms) || len(rel.Platforms) == 0 {
		t.Fatalf("packages %v for platforms %v", rel.Packages, rel.Platforms)
	}
	for pl, pkg := range rel.Packages {
		if len(pkg.Hashes) != 2 || !strings.HasPrefix(pkg.Hashes[0], "h1:") || pkg.Hashes[1] != "zh:"+pkg.Layer.Digest.Encoded() {
			t.Errorf("%s: hashes %v, want the stored h1 and the zip's zh", pl, pkg.Hashes)
		}
		if pkg.Release != rel {
			t.Errorf("%s: the package does not name its release", pl)
		}
	}
	if rel.Checksums == nil || len(rel.SigningKeyIDs) == 0 || !rel.Summarized {
		t.Errorf("the publisher's checksums and keys are not read: %+v", rel.Checksums)
	}
	blob, err := h.OpenProviderPackage(ctx, root, rel.Platforms[0])
	if err != nil || blob.Repo == nil || blob.Layer.Digest != rel.Packages[rel.Platforms[0]].Layer.Digest || !blob.Pinned {
		t.Errorf("the package of %s: %+v, %v", rel.Platforms[0], blob, err)
	}
}

func TestHeldSaysWhatItDoesNotHold(t *testing.T) {
	ctx := context.Background()
	h, p := heldHello(t)
	_, err := h.ResolveProvider(ctx, p, names.MustParseVersion("2.0.0"), names.ViaMirror)
	if !source.IsNotHeld(err) || !strings.Contains(err.Error(), "has no version 2.0.0") {
		t.Errorf("a version not held: %v, want a NotFound marked not held (pull-through may fetch it)", err)
	}
	other := names.Provider{Hostname: "example.com", Namespace: "test", Type: "other"}
	if _, err := h.ProviderVersions(ctx, other, names.ViaMirror, source.ListOptions{}); !source.Absent(err) || !strings.Contains(err.Error(), "unknown provider") {
		t.Errorf("a provider without a repository: %v, want \"unknown provider\"", err)
	}
	root, err := h.ResolveProvider(ctx, p, names.MustParseVersion("1.0.0"), names.ViaMirror)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.OpenProviderPackage(ctx, root, names.Platform{OS: "plan9", Arch: "arm"}); !source.Absent(err) {
		t.Errorf("a platform the release lacks: %v, want not found", err)
	}
}
