package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// featuresModule is moduledoc's fixture of every variable feature, with
// submodules and an example.
func featuresModule(t *testing.T) string {
	return filepath.Join(testenv.Root(t), "convert", "moduledoc", "testdata", "modules", "features")
}

// showJSON is `show --json REF`, parsed as any JSON.
func showJSON(t *testing.T, ref string) any {
	t.Helper()
	out := mustRun(t, "show", "--json", ref)
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("show --json %s: %v\n%s", ref, err, out)
	}
	return v
}

// asJSON is v marshalled and read back as any JSON.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// push module stores the package's interface beside it in a real
// registry, as an OCI 1.1 referrer the real oras CLI finds: the module
// manifest is the one the zip alone gives (the tag names it, nothing in it
// changed), a second push says the interface is there, and `show` prints
// it (people's table, --json the document moduledoc extracts from the
// directory). A package another tool pushed (the real oras) has none:
// show extracts it from the zip and says so. A provider is refused.
func TestShowModuleInterface(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/modules/features"
	src := featuresModule(t)

	out := mustRun(t, "push", "module", src, repo+":1.0.0")
	if !strings.Contains(out, "stored its interface (13 inputs, 4 outputs, 2 submodules, 1 example) as referrer sha256:") {
		t.Errorf("push module output:\n%s", out)
	}
	res := pushModule(t, src, repo+":1.0.0")
	root, err := oci.ModuleRoot(oci.ModuleLayerDescriptor(digest.Digest(res.ZipDigest), zipSize(t, src)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest != root.Digest.String() || tagDigest(t, reg, "modules/features", "1.0.0") != res.Digest || !res.UpToDate {
		t.Fatalf("the module manifest %s (tagged %s), want %s, the zip's alone", res.Digest, tagDigest(t, reg, "modules/features", "1.0.0"), root.Digest)
	}
	if out := mustRun(t, "push", "module", src, repo+":1.0.0"); !strings.Contains(out, "its interface is stored already (referrer sha256:") {
		t.Errorf("a second push:\n%s", out)
	}
	tls := []string{"--plain-http=false", "--ca-file", reg.CA.CertFile}
	discovered := mustOras(t, append([]string{"discover", "--format", "json", "--artifact-type", moduledoc.ArtifactType}, append(tls, repo+":1.0.0")...)...)
	var found struct {
		Referrers []struct{ ArtifactType, Digest string } `json:"referrers"`
	}
	if err := json.Unmarshal([]byte(discovered), &found); err != nil || len(found.Referrers) != 1 || found.Referrers[0].ArtifactType != moduledoc.ArtifactType {
		t.Fatalf("oras discover: %v\n%s", err, discovered)
	}

	human := mustRun(t, "show", repo+":1.0.0")
	for _, want := range []string{"Module package " + repo + ":1.0.0 (" + res.Digest + ")", "Root module (README.md)", `name           string`, `"demo"`, "Submodule modules/network", "Example examples/basic"} {
		if !strings.Contains(human, want) {
			t.Errorf("show lacks %q:\n%s", want, human)
		}
	}
	if strings.Contains(human, "extracted now") {
		t.Errorf("show extracted a stored interface:\n%s", human)
	}
	want, err := moduledoc.FromDir(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if got := showJSON(t, repo+"@"+res.Digest); !reflect.DeepEqual(got, asJSON(t, want)) {
		t.Errorf("show --json:\n%v\nwant\n%v", got, asJSON(t, want))
	}

	// Pushed by the real oras: the zip as the one archive/zip layer of a
	// manifest of OpenTofu's module artifact type, no interface beside it.
	z, err := modulepkg.Pack(context.Background(), src, modulepkg.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	testenv.MustRun(t, filepath.Dir(z.Path), testenvEnv(t), testenv.Tool(t, "oras"), append([]string{"push", "--no-tty", "--artifact-type", oci.ArtifactTypeModule},
		append(tls, repo+":2.0.0", filepath.Base(z.Path)+":"+oci.MediaTypeZip)...)...)
	human = mustRun(t, "show", repo+":2.0.0")
	if !strings.Contains(human, "(extracted now: no stored interface)") || !strings.Contains(human, "Submodule modules/network") {
		t.Errorf("show of a package without an interface:\n%s", human)
	}
	if got := showJSON(t, repo+":2.0.0"); !reflect.DeepEqual(got, asJSON(t, want)) {
		t.Errorf("show --json of the zip:\n%v\nwant\n%v", got, asJSON(t, want))
	}

	mustRun(t, "push", "provider", "--quiet", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"),
		testenv.Testdata(t, "providers", "hello", "1.0.0"), reg.Host+"/providers/test/hello")
	ref := reg.Host + "/providers/test/hello:1.0.0"
	if out, err := run(t, "show", ref); err == nil || !strings.Contains(out, "oci-tofu: show: "+ref+" holds a provider release; show reads module packages") {
		t.Errorf("show of a provider: %v\n%s", err, out)
	}
	if out, err := run(t, "show", repo+":9.9.9"); err == nil || !strings.Contains(out, "9.9.9") {
		t.Errorf("show of a missing tag: %v\n%s", err, out)
	}
}

// zipSize is the size of the zip push module packs dir to.
func zipSize(t *testing.T, dir string) int64 {
	t.Helper()
	z, err := modulepkg.Pack(context.Background(), dir, modulepkg.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(z.Path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
