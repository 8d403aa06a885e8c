package oci_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// CheckPush succeeds where pushes are allowed and fails where the registry
// refuses them, without writing anything.
func TestCheckPush(t *testing.T) {
	ctx := context.Background()
	open := testenv.StartRegistry(t)
	authed := testenv.StartRegistryWithAuth(t, "user", "Pa55word")
	ref := func(reg *testenv.Registry) oci.Reference {
		return oci.Reference{Registry: reg.Host, Repository: "providers/check/probe"}
	}
	anonymous, err := oci.NewClient(oci.Options{CAFile: open.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	if err := anonymous.CheckPush(ctx, ref(open)); err != nil {
		t.Errorf("a registry open to pushes: %v", err)
	}
	if err := anonymous.CheckPush(ctx, ref(authed)); err == nil {
		t.Error("a registry that wants credentials accepted an anonymous push check")
	}
	withCreds, err := oci.NewClient(oci.Options{CAFile: authed.CA.CertFile, Username: "user", Password: "Pa55word"})
	if err != nil {
		t.Fatal(err)
	}
	if err := withCreds.CheckPush(ctx, ref(authed)); err != nil {
		t.Errorf("with credentials: %v", err)
	}
	// Nothing was written: the repository has no tags and no upload left.
	r, err := anonymous.OpenReadOnly(ctx, ref(open))
	if err != nil {
		t.Fatal(err)
	}
	if list, err := oci.ListVersions(ctx, r); err == nil && len(list) > 0 {
		t.Errorf("tags after a push check: %v", list)
	}
	// (Distribution keeps an empty hashstates directory of a cancelled upload.)
	uploads, _ := filepath.Glob(filepath.Join(open.Storage, "docker/registry/v2/repositories/providers/check/probe/_uploads/*/startedat"))
	if len(uploads) > 0 {
		t.Errorf("upload sessions left behind (not cancelled): %v", uploads)
	}

	// An OCI layout: a directory that can be written.
	dir := filepath.Join(t.TempDir(), "layout")
	if err := anonymous.CheckPush(ctx, oci.Reference{Layout: true, Repository: dir}); err != nil {
		t.Errorf("writable layout: %v", err)
	}
	ro := t.TempDir()
	os.Chmod(ro, 0o500)
	defer os.Chmod(ro, 0o700)
	if os.Geteuid() != 0 { // root writes anywhere
		if err := anonymous.CheckPush(ctx, oci.Reference{Layout: true, Repository: filepath.Join(ro, "x")}); err == nil {
			t.Error("a read-only layout directory passed")
		}
	}
}

// A repository opened for writing asks for pull and push rights on every
// request, reads through FetchReference included: one token serves the
// whole push, and GHCR answers 404 (not a refusal) for a new repository.
func TestOpenAsksForPushScopeOnEveryRequest(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartTokenRegistry(t, "bob", "bob-pw")
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, Username: reg.Username, Password: reg.Password})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: "team/new"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := oci.FetchReference(ctx, repo, "1.0.0"); !oci.IsNotFound(err) {
		t.Fatalf("a tag of a new repository: %v, want not found", err)
	}
	if _, err := repo.Resolve(ctx, "1.0.0"); !oci.IsNotFound(err) {
		t.Fatalf("resolving: %v, want not found", err)
	}
	requests := reg.Token.Requests()
	if len(requests) == 0 {
		t.Fatal("no token was asked for")
	}
	for _, r := range requests {
		if !slices.Contains(r.Scopes, "repository:team/new:pull,push") && !slices.Contains(r.Scopes, "repository:team/new:push,pull") {
			t.Errorf("a token asked for %v, without push", r.Scopes)
		}
	}
}
