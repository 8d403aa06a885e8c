package publish_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/opencontainers/go-digest"
)

// docsTree writes a documentation tree whose thing page reads body.
func docsTree(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range map[string]string{
		"index.md":           "# Hello\n",
		"resources/thing.md": "---\npage_title: hello_thing\nsubcategory: Things\n---\n" + body,
	} {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// docsReferrers are the documentation referrers of the root.
func docsReferrers(t *testing.T, repo oci.ReadOnlyRepository, res oci.PushResult) []attach.Referrer {
	t.Helper()
	held, err := attach.ReadReferrersUpTo(context.Background(), repo, res.Root.Digest, providerdocs.ArtifactType, providerdocs.MaxStoredSize)
	if err != nil {
		t.Fatal(err)
	}
	return held.Items
}

// In a real Distribution registry: --docs stores the tree as a referrer
// of the index, whose digest is the one a push without --docs makes; a
// release pushed without it gets it on an up-to-date push, which writes
// no second referrer when pushed again; other documentation is refused
// without --replace (nothing written) and replaces the stored one with
// it.
func TestPushProviderStoresDocs(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	open := func(name string) (oci.Reference, oci.Repository) {
		ref := oci.Reference{Registry: reg.Host, Repository: name}
		repo, err := client.Open(ref)
		if err != nil {
			t.Fatal(err)
		}
		return ref, repo
	}
	var log bytes.Buffer
	rep := &report.Reporter{Out: &log, Err: &log}
	push := func(name, docs string, replace bool) (oci.PushResult, oci.Repository, error) {
		ref, repo := open(name)
		res, err, attestErr := publish.PushProvider(ctx, seed.Hello(t), publish.ProviderTarget{
			Target: publish.Target{Repo: repo, Ref: ref, Options: oci.PushOptions{Replace: replace}}, NoSBOM: true, DocsDir: docs, Report: rep})
		return res, repo, errors.Join(err, attestErr)
	}
	plain, plainRepo, err := push("plain/hello", "", false)
	if err != nil {
		t.Fatal(err)
	}
	if refs := docsReferrers(t, plainRepo, plain); len(refs) != 0 {
		t.Fatalf("a push without --docs stored %d documentation referrers", len(refs))
	}
	tree := docsTree(t, "# hello_thing\n")
	withDocs, repo, err := push("documented/hello", tree, false)
	if err != nil {
		t.Fatal(err)
	}
	if withDocs.Root.Digest != plain.Root.Digest || withDocs.UpToDate {
		t.Fatalf("index %s with --docs, %s without (up to date %v)", withDocs.Root.Digest, plain.Root.Digest, withDocs.UpToDate)
	}
	want, err := providerdocs.ReadDir(tree)
	if err != nil {
		t.Fatal(err)
	}
	got, desc, err := providerdocs.Read(ctx, repo, withDocs.Root.Digest)
	if err != nil || !got.Same(want) || len(got.Pages) != 2 || got.Find("resources", "thing").Subcategory != "Things" {
		t.Fatalf("read back: %+v %v", got, err)
	}
	if !strings.Contains(log.String(), "stored its documentation (2 pages) as referrer "+desc.Digest.String()) {
		t.Errorf("the push said:\n%s", log.String())
	}

	upToDate, _, err := push("plain/hello", tree, false)
	if err != nil || !upToDate.UpToDate {
		t.Fatalf("an up-to-date push with --docs: %+v %v", upToDate, err)
	}
	if refs := docsReferrers(t, plainRepo, plain); len(refs) != 1 {
		t.Fatalf("the up-to-date push stored %d documentation referrers, want 1", len(refs))
	}
	log.Reset()
	again, _, err := push("plain/hello", tree, false)
	if err != nil || !again.UpToDate || len(docsReferrers(t, plainRepo, plain)) != 1 || !strings.Contains(log.String(), "its documentation is stored already (2 pages") {
		t.Fatalf("pushed again: %+v %v, %d referrers\n%s", again, err, len(docsReferrers(t, plainRepo, plain)), log.String())
	}

	other := docsTree(t, "# hello_thing, rewritten\n")
	if _, _, err := push("plain/hello", other, false); !errors.Is(err, providerdocs.ErrDiffers) || !strings.Contains(err.Error(), "--replace") {
		t.Fatalf("other documentation without --replace: %v", err)
	}
	if refs := docsReferrers(t, plainRepo, plain); len(refs) != 1 {
		t.Fatalf("the refused push stored a referrer: %d", len(refs))
	}
	if _, _, err := push("plain/hello", other, true); err != nil {
		t.Fatalf("--replace: %v", err)
	}
	replaced, _, err := providerdocs.Read(ctx, plainRepo, plain.Root.Digest)
	if err != nil || !strings.Contains(replaced.Find("resources", "thing").Markdown, "rewritten") {
		t.Fatalf("after --replace: %+v %v", replaced, err)
	}
	if _, _, err := push("plain/hello", other, false); err != nil {
		t.Errorf("the replacement pushed again: %v", err)
	}
}

// A tree that does not read pushes nothing; an OCI layout stores no
// documentation, and says so.
func TestPushProviderDocsRefusedOrNotInLayout(t *testing.T) {
	ctx := context.Background()
	repo := newWatched(t)
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err, _ := publish.PushProvider(ctx, seed.Hello(t), publish.ProviderTarget{Target: publish.Target{Repo: repo, Ref: helloRef}, DocsDir: bad})
	if err == nil || !strings.Contains(err.Error(), "reading the documentation: ") {
		t.Fatalf("a tree with no page: %v", err)
	}
	if tags, _ := oci.ListTags(ctx, repo); len(tags) != 0 {
		t.Fatalf("tags written: %v", tags)
	}
	var log bytes.Buffer
	layout := oci.Reference{Layout: true, Repository: t.TempDir()}
	res, err, attestErr := publish.PushProvider(ctx, seed.Hello(t), publish.ProviderTarget{Target: publish.Target{Repo: repo, Ref: layout}, DocsDir: docsTree(t, "x"), Report: &report.Reporter{Out: &log, Err: &log}})
	if err != nil || attestErr != nil {
		t.Fatal(err, attestErr)
	}
	if refs := docsReferrers(t, repo, res); len(refs) != 0 || !strings.Contains(log.String(), "no documentation in an OCI layout") {
		t.Errorf("%d referrers in the layout; said:\n%s", len(refs), log.String())
	}
}

// push provider --json reports the documentation referrer stored (its
// digest and page count, whether written now), and nothing of it for a
// push without --docs.
func TestPushProviderReportsDocs(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	ref := oci.Reference{Registry: reg.Host, Repository: "documented/hello"}
	repo, err := client.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	tree := docsTree(t, "# hello_thing\n")
	pushed := func(docsDir string) map[string]any {
		t.Helper()
		var out bytes.Buffer
		rep := &report.Reporter{Out: &out, Err: &out, JSON: true}
		var docs providerdocs.Stored
		rel := seed.Hello(t)
		res, err, attestErr := publish.PushProvider(ctx, rel, publish.ProviderTarget{
			Target: publish.Target{Repo: repo, Ref: ref}, NoSBOM: true, DocsDir: docsDir, DocsStored: &docs})
		if err := errors.Join(err, attestErr); err != nil {
			t.Fatal(err)
		}
		if err := publish.ReportPushed(rep, rel, ref, res, &docs); err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(out.Bytes(), &v); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		return v
	}
	first := pushed(tree)
	_, desc, err := providerdocs.Read(ctx, repo, digest.Digest(first["digest"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"referrer": desc.Digest.String(), "pages": 2.0, "written": true, "replaced": []any{}}
	if got, _ := first["docs"].(map[string]any); !reflect.DeepEqual(got, want) {
		t.Errorf("first push's docs: %v, want %v", first["docs"], want)
	}
	want["written"] = false
	if got, _ := pushed(tree)["docs"].(map[string]any); !reflect.DeepEqual(got, want) {
		t.Errorf("up-to-date push's docs: %v, want %v", got, want)
	}
	if v, ok := pushed("")["docs"]; ok {
		t.Errorf("a push without --docs reports docs: %v", v)
	}
}
