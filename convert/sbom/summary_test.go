package sbom

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Summarize reads what a stored document says, through its SPDX: the Go
// executable's toolchain, main module, module count and revision, and
// why another executable has none.
func TestSummarize(t *testing.T) {
	doc := &Document{Name: "example.com/test/hello", Version: "1.0.0", Platform: "linux_amd64", FileName: "terraform-provider-hello_1.0.0_linux_amd64.zip",
		ZipDigest: digest.Digest("sha256:" + strings.Repeat("cd", 32)), Created: time.Unix(0, 0).UTC(),
		Executables: []Executable{
			{Name: "terraform-provider-hello_v1.0.0", SHA256: strings.Repeat("ab", 32), Size: 1,
				Go: &GoBuild{GoVersion: "go1.27.5", Path: "example.com/hello", Main: Module{Path: "example.com/hello", Version: "v1.0.0"},
					Deps:     []Module{{Path: "golang.org/x/text", Version: "v0.3.7", Sum: "h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk="}},
					Settings: map[string]string{"GOOS": "linux", "GOARCH": "amd64", "vcs.revision": "0123abc"}}},
			{Name: "helper.sh", SHA256: strings.Repeat("ef", 32), Size: 2, NotGo: "not an executable Go binary"},
		}}
	b, err := doc.SPDX()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := ParseSPDX(b)
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(names.Platform{OS: "linux", Arch: "amd64"}, &Stored{SPDX: b, Doc: parsed, Referrer: ocispec.Descriptor{Digest: digest.Digest("sha256:" + strings.Repeat("01", 32))}})
	if len(s.Executables) != 2 {
		t.Fatalf("executables: %+v", s.Executables)
	}
	var goExe, other ExecutableSummary
	for _, e := range s.Executables {
		if e.Go {
			goExe = e
		} else {
			other = e
		}
	}
	if goExe.GoVersion != "go1.27.5" || goExe.MainModule != "example.com/hello@v1.0.0" || goExe.Modules != 2 || goExe.Revision != "0123abc" {
		t.Errorf("Go executable: %+v", goExe)
	}
	if other.Name != "helper.sh" || other.NotGo == "" {
		t.Errorf("other executable: %+v", other)
	}
	text := s.Text()
	for _, want := range []string{"linux_amd64: terraform-provider-hello_1.0.0_linux_amd64.zip (sha256:cdcd", "main module example.com/hello@v1.0.0, 2 modules, revision 0123abc", "helper.sh: no Go build information"} {
		if !strings.Contains(text, want) {
			t.Errorf("Text() lacks %q:\n%s", want, text)
		}
	}
	j, _ := json.Marshal(s)
	for _, want := range []string{`"go_version":"go1.27.5"`, `"main_module":"example.com/hello@v1.0.0"`, `"modules":2`, `"not_go":`} {
		if !strings.Contains(string(j), want) {
			t.Errorf("JSON lacks %s: %s", want, j)
		}
	}
}
