package show_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/show"
)

// withIndexAnnotations is a with its index's annotations replaced by
// ann, as anyone who may push could write them.
func withIndexAnnotations(t *testing.T, a *oci.Artifact, ann map[string]string) *oci.Artifact {
	t.Helper()
	root := &a.Manifests[len(a.Manifests)-1]
	var idx ocispec.Index
	if err := json.Unmarshal(root.Bytes, &idx); err != nil {
		t.Fatal(err)
	}
	for k, v := range ann {
		idx.Annotations[k] = v
	}
	b, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	root.Bytes, root.Descriptor.Digest, root.Descriptor.Size = b, digest.FromBytes(b), int64(len(b))
	return a
}

// A hostile release's strings (its index's protocols and publisher key
// annotations, written by anyone who may push) reach the terminal
// without their control characters: no escape sequence, no bell, no
// line of their own (a forged "Status:" line), no bidirectional
// override; --json keeps them as they are.
func TestShowTextPrintsNoControlCharacters(t *testing.T) {
	dir := t.TempDir()
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Layout: true, Repository: dir + "/test/hello"})
	if err != nil {
		t.Fatal(err)
	}
	const evil = "6.0\x1b]0;owned\x07\x1b[2J\nStatus:          served\r\u202egnp.exe"
	seed.Push(t, repo, withIndexAnnotations(t, seed.HelloArtifact(t, "1.0.0"), map[string]string{
		oci.AnnotationProtocols: evil, oci.AnnotationSigningKeys: "ABCD\x1b[31m,\x9bEF",
	}), "1.0.0")
	opts := show.Options{Client: client, ProviderTemplate: "oci-layout:" + dir + "/${namespace}/${type}"}
	out, err := shown(t, "example.com/test/hello", opts, false)
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.IndexFunc(out, func(r rune) bool { return r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) }); i >= 0 {
		t.Errorf("a control character at %d of\n%q", i, out)
	}
	if n := strings.Count("\n"+out, "\nStatus:"); n != 1 {
		t.Errorf("%d Status lines in\n%s", n, out)
	}
	if !strings.Contains(out, "6.0") || !strings.Contains(out, "ABCD") {
		t.Errorf("the hostile strings are not shown at all:\n%s", out)
	}
	js, err := shown(t, "example.com/test/hello", opts, true)
	if err != nil {
		t.Fatal(err)
	}
	var page struct{ Protocols []string }
	if err := json.Unmarshal([]byte(js), &page); err != nil || len(page.Protocols) != 1 || page.Protocols[0] != evil {
		t.Errorf("--json protocols %q (%v), want %q", page.Protocols, err, evil)
	}
}
