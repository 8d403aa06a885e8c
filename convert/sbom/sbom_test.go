package sbom

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/opencontainers/go-digest"
	"github.com/santhosh-tekuri/jsonschema/v6"
	spdxjson "github.com/spdx/tools-golang/json"
)

func demoOptions(platform string) Options {
	return Options{Name: "registry.example/acme/demo", Version: "1.0.0", Platform: platform, Created: time.Date(2024, 3, 5, 6, 7, 8, 0, time.UTC)}
}

// spdxSchema is the SPDX 2.3 JSON schema (testdata/spdx-schema-2.3.json).
func spdxSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/spdx-schema-2.3.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("spdx-schema-2.3.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("spdx-schema-2.3.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkSPDX checks a document's SPDX: valid by the schema, read by the
// format library, read back by ParseSPDX as the same document.
func checkSPDX(t *testing.T, schema *jsonschema.Schema, d *Document) []byte {
	t.Helper()
	b, err := d.SPDX()
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(v); err != nil {
		t.Errorf("the SPDX document is invalid: %v", err)
	}
	lib, err := spdxjson.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("tools-golang cannot read the SPDX document: %v", err)
	}
	if len(lib.Packages) < 1+len(d.Executables) {
		t.Errorf("tools-golang reads %d packages", len(lib.Packages))
	}
	back, err := ParseSPDX(b)
	if err != nil {
		t.Fatalf("ParseSPDX: %v", err)
	}
	if _, lean, _ := parseLean(b); !lean {
		t.Error("ParseSPDX's lean reader leaves a document SPDX wrote to the library")
	}
	if viaLibrary, err := parseWithLibrary(b); err != nil || !reflect.DeepEqual(viaLibrary, back) {
		t.Errorf("tools-golang's reading differs from the lean one (%v):\n%+v\n%+v", err, viaLibrary, back)
	}
	if !reflect.DeepEqual(back, d) {
		t.Errorf("ParseSPDX reads back\n%+v\nnot\n%+v", back, d)
	}
	return b
}

// A real Go provider, for each platform: its modules are those `go version
// -m` lists (path, version, sum, replacement), the SPDX document is valid,
// holds the purls, and reads back.
func TestFromZipGoBinaries(t *testing.T) {
	bins := demoBinaries(t)
	schema := spdxSchema(t)
	for platform, bin := range bins {
		t.Run(platform, func(t *testing.T) {
			exeName := bin[strings.LastIndexByte(bin, '/')+1:]
			z := makeZip(t, zipFile{exeName, readFile(t, bin)}, zipFile{"LICENSE", []byte("MIT\n")}, zipFile{"README.md", []byte("# demo\n")})
			d, err := FromZip(bytes.NewReader(z), int64(len(z)), demoOptions(platform))
			if err != nil {
				t.Fatal(err)
			}
			if d.ZipDigest != digest.FromBytes(z) || d.FileName != "terraform-provider-demo_1.0.0_"+platform+".zip" {
				t.Errorf("zip %s %s", d.FileName, d.ZipDigest)
			}
			if len(d.Executables) != 1 {
				t.Fatalf("executables %+v, want the provider only", d.Executables)
			}
			e := d.Executables[0]
			if e.Name != exeName || e.Go == nil || e.Size != int64(len(readFile(t, bin))) || e.SHA256 != digest.FromBytes(readFile(t, bin)).Encoded() {
				t.Fatalf("executable %+v", e)
			}
			if got, want := testenv.ModuleLines(e.Go.BuildInfo().String()), testenv.GoVersionM(t, bin); !slices.Equal(got, want) {
				t.Errorf("modules\n%s\n`go version -m`\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			goos, goarch, _ := strings.Cut(platform, "_")
			if e.Go.Settings["GOOS"] != goos || e.Go.Settings["GOARCH"] != goarch || e.Go.Settings["-trimpath"] != "true" {
				t.Errorf("settings %v", e.Go.Settings)
			}
			if e.Go.GoVersion != runtime.Version() {
				t.Errorf("go version %s, want %s", e.Go.GoVersion, runtime.Version())
			}
			b := checkSPDX(t, schema, d)
			s := string(b)
			for _, want := range []string{
				`"referenceLocator":"pkg:golang/golang.org/x/text@v0.3.7"`,
				`"referenceLocator":"pkg:golang/github.com/google/uuid@v1.5.0"`,
				`"referenceLocator":"` + StdlibPURL(runtime.Version()) + `"`,
				`"comment":"replaces github.com/google/uuid v1.6.0; go.sum h1:`,
				`"relationshipType":"DESCRIBES"`, `"relationshipType":"DEPENDS_ON"`,
			} {
				if !strings.Contains(s, want) {
					t.Errorf("the SPDX document lacks %s", want)
				}
			}
			if strings.Contains(s, "LICENSE") {
				t.Error("the SPDX document lists a file that is no executable")
			}
		})
	}
}

// The same zip and options give the same bytes, whether the digest is
// given or computed; another creation time gives other bytes.
func TestReproducible(t *testing.T) {
	bin := demoBinaries(t)["linux_amd64"]
	z := makeZip(t, zipFile{"terraform-provider-demo_v1.0.0", readFile(t, bin)})
	spdx := func(o Options) []byte {
		d, err := FromZip(bytes.NewReader(z), int64(len(z)), o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := d.SPDX()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	o := demoOptions("linux_amd64")
	a := spdx(o)
	o.ZipDigest = digest.FromBytes(z)
	if b := spdx(o); !bytes.Equal(a, b) {
		t.Errorf("not reproducible:\n%s\n%s", a, b)
	}
	o.Created = time.Time{}
	b := spdx(o)
	if bytes.Equal(a, b) || !bytes.Contains(b, []byte(`"created":"1970-01-01T00:00:00Z"`)) {
		t.Errorf("no creation time is not the epoch: %s", b)
	}
	var doc struct{ DocumentNamespace string }
	if err := json.Unmarshal(a, &doc); err != nil || !strings.Contains(doc.DocumentNamespace, digest.FromBytes(z).Encoded()) {
		t.Errorf("namespace %q does not name the zip's digest (%v)", doc.DocumentNamespace, err)
	}
}

// trueBinary is a small executable that is no Go binary.
func trueBinary(t testing.TB) []byte {
	b, err := os.ReadFile("/bin/true")
	if err != nil || !bytes.HasPrefix(b, []byte("\x7fELF")) {
		t.Skip("no ELF /bin/true")
	}
	return b
}

// Several executables are each listed, sorted by name; one that is no Go
// binary is listed with its sha256 and why it has no modules; other files
// are not.
func TestSeveralExecutables(t *testing.T) {
	bins := demoBinaries(t)
	tru := trueBinary(t)
	z := makeZip(t,
		zipFile{"terraform-provider-demo_v1.0.0", readFile(t, bins["linux_amd64"])},
		zipFile{"CHANGELOG.md", []byte("## 1.0.0\n")},
		zipFile{"bin/helper", tru},
		zipFile{"plugin.exe", readFile(t, bins["windows_amd64"])},
		zipFile{"dir/", nil},
	)
	d, err := FromZip(bytes.NewReader(z), int64(len(z)), demoOptions("linux_amd64"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range d.Executables {
		got = append(got, e.Name)
	}
	if want := []string{"bin/helper", "plugin.exe", "terraform-provider-demo_v1.0.0"}; !slices.Equal(got, want) {
		t.Fatalf("executables %v, want %v", got, want)
	}
	helper := d.Executables[0]
	if helper.Go != nil || !strings.Contains(helper.NotGo, "not a Go binary") || helper.SHA256 != digest.FromBytes(tru).Encoded() {
		t.Errorf("the non-Go executable: %+v", helper)
	}
	if d.Executables[1].Go == nil || d.Executables[1].Go.Settings["GOOS"] != "windows" || d.Executables[2].Go == nil {
		t.Errorf("the Go executables: %+v", d.Executables[1:])
	}
	b := checkSPDX(t, spdxSchema(t), d)
	if !bytes.Contains(b, []byte(`executable of `+strconv.Itoa(len(tru))+` bytes; not a Go binary`)) || !bytes.Contains(b, []byte(helper.SHA256)) {
		t.Errorf("the non-Go executable's package: %s", b)
	}
}

// A package whose only executable is no Go binary has the minimal SBOM.
func TestNotGo(t *testing.T) {
	tru := trueBinary(t)
	z := makeZip(t, zipFile{"terraform-provider-demo_v1.0.0", tru})
	d, err := FromZip(bytes.NewReader(z), int64(len(z)), demoOptions("linux_amd64"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Executables) != 1 || d.Executables[0].Go != nil || d.Executables[0].NotGo == "" {
		t.Fatalf("%+v", d.Executables)
	}
	checkSPDX(t, spdxSchema(t), d)
	// a script named as the provider is listed too
	z = makeZip(t, zipFile{"terraform-provider-demo_v1.0.0", []byte("#!/bin/sh\n")})
	if d, err := FromZip(bytes.NewReader(z), int64(len(z)), demoOptions("linux_amd64")); err != nil || len(d.Executables) != 1 || d.Executables[0].Go != nil {
		t.Errorf("a script: %+v, %v", d, err)
	}
}

// fromBinary is the one executable FromZip finds in a zip of bin.
func fromBinary(t *testing.T, bin []byte) Executable {
	t.Helper()
	z := makeZip(t, zipFile{"terraform-provider-demo_v1.0.0", bin})
	d, err := FromZip(bytes.NewReader(z), int64(len(z)), demoOptions("linux_amd64"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Executables) != 1 {
		t.Fatalf("%+v", d.Executables)
	}
	if _, err := d.SPDX(); err != nil {
		t.Fatal(err)
	}
	return d.Executables[0]
}

// Forged build information, in a real binary and in a made one, makes
// the executable "not a readable Go binary", never a panic.
func TestForgedBuildInfo(t *testing.T) {
	bin := readFile(t, demoBinaries(t)["linux_amd64"])
	at := bytes.Index(bin, buildInfoMagic)
	if at < 0 {
		t.Fatal("no build information header in the test binary")
	}
	patch := func(off int, b ...byte) []byte {
		out := bytes.Clone(bin)
		copy(out[at+off:], b)
		return out
	}
	for name, tc := range map[string]struct {
		bin  []byte
		want string
	}{
		"magic":         {patch(1, 'X'), "not a Go binary"},
		"pointer form":  {patch(15, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), "not a Go binary"},
		"pointer size":  {patch(14, 3), ""}, // the inline form ignores it
		"version 16 EB": {patch(32, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), "Go version of"},
		"version 1 KiB": {patch(32, 0x80, 0x08), "Go version of"},
		"version 200 B": {patch(32, 0xc8, 0x01), "not a readable Go binary"},
		"version 9 B":   {patch(32, 9), "not a readable Go binary"},
		"made, no mods": {fakeELF("go1.22.1", "not modules\n", -1), ""}, // unknown lines are skipped
		"made, NUL":     {fakeELF("go1.22.1", "path\tx\x00y\n", -1), "not a readable Go binary"},
		"made, version": {fakeELF("1.22.1", fakeMod, -1), "not a readable Go binary"},
		"made, 50 MB":   {fakeELF("go1.22.1", fakeMod, 50<<20), "declares 52428800 bytes, more than the 4194304 accepted"},
		"made, 16 EB":   {fakeELF("go1.22.1", fakeMod, 1<<62), "more than the 4194304 accepted"},
	} {
		t.Run(name, func(t *testing.T) {
			e := fromBinary(t, tc.bin)
			if tc.want == "" {
				if e.Go == nil {
					t.Errorf("unread: %s", e.NotGo)
				}
				return
			}
			if e.Go != nil || !strings.Contains(e.NotGo, tc.want) {
				t.Errorf("Go %+v, NotGo %q, want %q", e.Go, e.NotGo, tc.want)
			}
		})
	}
	if e := fromBinary(t, fakeELF("go1.22.1", fakeMod, -1)); e.Go == nil || len(e.Go.Deps) != 1 || e.Go.Deps[0].Path != "golang.org/x/text" {
		t.Errorf("the made binary's build information: %+v %s", e.Go, e.NotGo)
	}
}

// A real build information of 50 MB is refused without reading it: the
// memory FromZip allocates stays far below it.
func TestHugeBuildInfoBounded(t *testing.T) {
	mod := fakeMod + strings.Repeat("dep\texample.com/m\tv1.0.0\t\n", (50<<20)/25)
	z := makeZip(t, zipFile{"terraform-provider-demo_v1.0.0", fakeELF("go1.22.1", mod, -1)})
	mod = ""
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d, err := FromZip(bytes.NewReader(z), int64(len(z)), demoOptions("linux_amd64"))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if e := d.Executables[0]; e.Go != nil || !strings.Contains(e.NotGo, "more than the 4194304 accepted") {
		t.Errorf("%+v", e)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("FromZip allocated %d bytes for a 50 MB build information", alloc)
	}
}

// Zips beyond the bounds, broken or empty fail with a clear error.
func TestZipBounds(t *testing.T) {
	raw := func(h zip.FileHeader, data []byte) []byte {
		var buf bytes.Buffer
		w := zip.NewWriter(&buf)
		h.Method = zip.Store
		h.CompressedSize64 = uint64(len(data))
		fw, err := w.CreateRaw(&h)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(data)
		w.Close()
		return buf.Bytes()
	}
	var many []zipFile
	for i := range MaxEntries + 1 {
		many = append(many, zipFile{"f" + strconv.Itoa(i), nil})
	}
	for name, tc := range map[string]struct {
		zip  []byte
		want string
	}{
		"declared 2 GiB":       {raw(zip.FileHeader{Name: "terraform-provider-demo_v1.0.0", UncompressedSize64: 2 << 30}, []byte("\x7fELF")), "declare more than 1073741824 bytes"},
		"longer than declared": {raw(zip.FileHeader{Name: "terraform-provider-demo_v1.0.0", UncompressedSize64: 4}, []byte("\x7fELF and more")), "terraform-provider-demo_v1.0.0"},
		"many entries":         {makeZip(t, many...), "more than the 256 accepted"},
		"no executable":        {makeZip(t, zipFile{"LICENSE", []byte("MIT")}), "holds no executable"},
		"twice":                {makeZip(t, zipFile{"a", nil}, zipFile{"a", nil}), `holds "a" twice`},
		"not a zip":            {[]byte("PK\x03\x04 no zip"), "zip"},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := FromZip(bytes.NewReader(tc.zip), int64(len(tc.zip)), demoOptions("linux_amd64"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v, %v; want an error with %q", d, err, tc.want)
			}
			if (name == "no executable") != errors.Is(err, ErrNoExecutable) {
				t.Errorf("%v: errors.Is ErrNoExecutable %v", err, errors.Is(err, ErrNoExecutable))
			}
		})
	}
}

// Options that name no provider package, and digests that are no sha256,
// are refused.
func TestOptions(t *testing.T) {
	z := makeZip(t, zipFile{"terraform-provider-demo_v1.0.0", []byte("#!/bin/sh\n")})
	for _, o := range []Options{
		{Name: "demo", Version: "1.0.0"},
		{Name: "demo", Version: "v1.0.0", Platform: "linux_amd64"},
		{Name: "de mo", Version: "1.0.0", Platform: "linux_amd64"},
		{Name: "demo", Version: "1.0.0", Platform: "linux_amd64", ZipDigest: "sha512:00"},
	} {
		if _, err := FromZip(bytes.NewReader(z), int64(len(z)), o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// The scanner finds the magic wherever the writes split it.
func TestMagicScanner(t *testing.T) {
	data := append(append(bytes.Repeat([]byte("x"), 100), buildInfoMagic...), "yy"...)
	data = append(data, buildInfoMagic...)
	for step := 1; step < len(data); step++ {
		s := &magicScanner{}
		for i := 0; i < len(data); i += step {
			s.Write(data[i:min(i+step, len(data))])
		}
		if !slices.Equal(s.offsets, []int64{100, 116}) {
			t.Fatalf("writes of %d: offsets %v", step, s.offsets)
		}
	}
}

// The standard library's purl is the one syft writes and OSV matches.
func TestStdlibPURL(t *testing.T) {
	for in, want := range map[string]string{
		"go1.22.1": "pkg:golang/stdlib@1.22.1", "go1.23rc1": "pkg:golang/stdlib@1.23rc1",
		"go1.22.1 X:boringcrypto": "pkg:golang/stdlib@1.22.1", "devel go1.23-abc": "", "": "", "go": "",
	} {
		if got := StdlibPURL(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// A document another tool wrote reads as one without build information;
// garbage is an error.
func TestParseSPDXOthers(t *testing.T) {
	for _, b := range []string{"", "{}", `{"spdxVersion":"SPDX-2.3"}`, "[1]"} {
		if _, err := ParseSPDX([]byte(b)); err == nil {
			t.Errorf("%q: no error", b)
		}
	}
}
