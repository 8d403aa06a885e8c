package moduledoc_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// storeTarget is where a store test pushes: an OCI layout, or a real
// Distribution registry.
type storeTarget struct {
	name   string
	client func(t *testing.T) (*oci.Client, oci.Reference)
}

var storeTargets = []storeTarget{
	{"layout", func(t *testing.T) (*oci.Client, oci.Reference) {
		return newClient(t, oci.Options{}), oci.Reference{Layout: true, Repository: t.TempDir()}
	}},
	{"distribution", func(t *testing.T) (*oci.Client, oci.Reference) {
		reg := testenv.StartRegistry(t)
		return newClient(t, oci.Options{CAFile: reg.CA.CertFile}), oci.Reference{Registry: reg.Host, Repository: "modules/greeting"}
	}},
}

func newClient(t *testing.T, o oci.Options) *oci.Client {
	t.Helper()
	c, err := oci.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// prepare packs the greeting fixture for target (no record of earlier
// packs unless cache).
func prepare(t *testing.T, target modulepkg.Target, cache *modulepkg.Cache) *modulepkg.Package {
	t.Helper()
	p, err := modulepkg.Prepare(context.Background(), testenv.Testdata(t, "modules", "greeting"), target, modulepkg.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Remove() })
	return p
}

// interfaceReferrers are the interface referrers of subject, read.
func interfaceReferrers(t *testing.T, repo oci.ReadOnlyRepository, subject ocispec.Descriptor) []attach.Referrer {
	t.Helper()
	held, err := attach.ReadReferrersUpTo(context.Background(), repo, subject.Digest, moduledoc.ArtifactType, moduledoc.MaxDocSize)
	if err != nil {
		t.Fatal(err)
	}
	return held.Items
}

// Push stores a package's interface beside its module manifest, in an OCI
// layout and in a real registry: the manifest is the one BuildModule makes
// for the zip (the referrer changes nothing OpenTofu reads, and the tag
// names it), the referrer's one layer is the Doc's JSON, byte for byte
// what FromDir makes of the directory, and Read gives it back. Pushing
// again (up to date, or Unchanged through the record of packs) writes no
// second referrer, and Attach of the same Doc writes nothing.
func TestPushStoresTheInterface(t *testing.T) {
	ctx := context.Background()
	for _, st := range storeTargets {
		t.Run(st.name, func(t *testing.T) {
			client, ref := st.client(t)
			target := modulepkg.Target{Client: client, Ref: ref, Tags: []string{"1.0.0"}}
			p := prepare(t, target, nil)
			res, err := moduledoc.Push(ctx, p, target, moduledoc.PushOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := oci.ModuleRoot(oci.ModuleLayerDescriptor(p.Digest, p.Size))
			if err != nil {
				t.Fatal(err)
			}
			repo, err := client.Open(ref)
			if err != nil {
				t.Fatal(err)
			}
			tagged, zip, err := oci.ResolveModule(ctx, repo, "1.0.0")
			if err != nil {
				t.Fatal(err)
			}
			if res.Root.Digest != want.Digest || tagged.Digest != want.Digest || zip.Digest != p.Digest {
				t.Fatalf("module manifest %s, tagged %s (zip %s), want %s (zip %s)", res.Root.Digest, tagged.Digest, zip.Digest, want.Digest, p.Digest)
			}

			fromDir, err := moduledoc.FromDir(ctx, testenv.Testdata(t, "modules", "greeting"))
			if err != nil {
				t.Fatal(err)
			}
			wantJSON, err := fromDir.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			refs := interfaceReferrers(t, repo, tagged)
			if len(refs) != 1 || refs[0].Err != nil || len(refs[0].Layers) != 1 || string(refs[0].Layers[0].Payload) != string(wantJSON) {
				t.Fatalf("interface referrers %+v\nwant one holding %s", refs, wantJSON)
			}
			doc, err := moduledoc.Read(ctx, repo, tagged.Digest)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := doc.Marshal(); string(b) != string(wantJSON) {
				t.Fatalf("Read gave %s\nwant %s", b, wantJSON)
			}
			if len(doc.Package.Root.Inputs) != 1 || doc.Package.Root.Inputs[0].Name != "name" || len(doc.READMEs) != 1 || doc.READMEs[0].Path != "README.md" {
				t.Errorf("the greeting's interface: %+v, READMEs %+v", doc.Package.Root, doc.READMEs)
			}

			// Again: up to date, then Unchanged (the record of packs knows
			// the tree), then under another tag: one referrer still.
			again, err := moduledoc.Push(ctx, prepare(t, target, nil), target, moduledoc.PushOptions{})
			if err != nil || !again.UpToDate {
				t.Fatalf("second push: %+v %v", again, err)
			}
			cache := &modulepkg.Cache{Dir: t.TempDir()}
			prepare(t, modulepkg.Target{Client: client, Ref: ref, Tags: []string{"none-yet"}}, cache) // records the tree
			if u := prepare(t, target, cache); u.How != modulepkg.Unchanged {
				t.Fatalf("prepared %s, want unchanged", u.How)
			} else if _, err := moduledoc.Push(ctx, u, target, moduledoc.PushOptions{}); err != nil {
				t.Fatal(err)
			}
			other := modulepkg.Target{Client: client, Ref: ref, Tags: []string{"latest"}}
			if _, err := moduledoc.Push(ctx, prepare(t, other, nil), other, moduledoc.PushOptions{}); err != nil {
				t.Fatal(err)
			}
			if refs := interfaceReferrers(t, repo, tagged); len(refs) != 1 {
				t.Fatalf("after pushing again, %d interface referrers", len(refs))
			}
			d, written, err := moduledoc.Attach(ctx, repo, tagged, fromDir)
			if err != nil || written || d.Digest != refs[0].Descriptor.Digest {
				t.Fatalf("Attach of the stored Doc: %v, written %v, %s want %s", err, written, d.Digest, refs[0].Descriptor.Digest)
			}
		})
	}
}

// A module manifest without an interface reads ErrNoDoc; one whose only
// interface referrer does not parse (not JSON, a format this version does
// not read) reads ErrBadDoc, naming it; beside a good one, the good one is
// read.
func TestReadSkipsWhatDoesNotParse(t *testing.T) {
	ctx := context.Background()
	client, ref := storeTargets[0].client(t)
	target := modulepkg.Target{Client: client, Ref: ref, Tags: []string{"1.0.0"}}
	p := prepare(t, target, nil)
	res, err := p.Push(ctx, target, oci.PushOptions{}) // without its interface
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := moduledoc.Read(ctx, repo, res.Root.Digest); !errors.Is(err, moduledoc.ErrNoDoc) {
		t.Fatalf("Read without a referrer: %v", err)
	}
	for i, payload := range []string{`{"format": 1, "package": `, `{"format": 2, "package": {}}`} {
		bad, err := attach.WriteReferrer(ctx, repo, res.Root, moduledoc.ArtifactType, []attach.AttachmentLayer{{MediaType: moduledoc.ArtifactType, Payload: []byte(payload)}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = moduledoc.Read(ctx, repo, res.Root.Digest)
		if !errors.Is(err, moduledoc.ErrBadDoc) || errors.Is(err, moduledoc.ErrNoDoc) || i == 0 && !strings.Contains(err.Error(), bad.Digest.String()) {
			t.Fatalf("Read of %s: %v", payload, err)
		}
	}
	doc, err := moduledoc.FromDir(ctx, testenv.Testdata(t, "modules", "greeting"))
	if err != nil {
		t.Fatal(err)
	}
	if _, written, err := moduledoc.Attach(ctx, repo, res.Root, doc); err != nil || !written {
		t.Fatalf("Attach beside the bad ones: %v, written %v", err, written)
	}
	got, err := moduledoc.Read(ctx, repo, res.Root.Digest)
	if err != nil || got.Package.Root.Inputs[0].Name != "name" {
		t.Fatalf("Read beside the bad ones: %+v %v", got, err)
	}
	// Push finds the good one: nothing more is written.
	if _, err := moduledoc.Push(ctx, p, target, moduledoc.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := len(interfaceReferrers(t, repo, res.Root)); n != 3 {
		t.Fatalf("%d interface referrers, want the two bad ones and the good one", n)
	}
}
