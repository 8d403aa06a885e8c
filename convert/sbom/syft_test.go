package sbom

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// The SBOM's Go packages are the ones syft catalogues in the same binary:
// every dependency (a replaced one as its replacement) and the standard
// library with the same name, version, purl and go.sum hash, and the main
// module by its path. The one difference is the main module's version,
// which `go version -m` prints as (devel): we keep that (and so no purl,
// which needs a version); syft writes UNKNOWN and a versionless purl.
func TestFromZipAgreesWithSyft(t *testing.T) {
	for platform, bin := range demoBinaries(t) {
		t.Run(platform, func(t *testing.T) {
			exeName := bin[strings.LastIndexByte(bin, '/')+1:]
			z := makeZip(t, zipFile{exeName, readFile(t, bin)}, zipFile{"LICENSE", []byte("MIT\n")})
			d, err := FromZip(bytes.NewReader(z), int64(len(z)), demoOptions(platform))
			if err != nil {
				t.Fatal(err)
			}
			b, err := d.SPDX()
			if err != nil {
				t.Fatal(err)
			}
			mainPath := d.Executables[0].Go.Main.Path
			got := spdxGoPackages(t, b, mainPath)
			var want []string
			for _, p := range testenv.Syft(t, bin) {
				if p.Name == mainPath {
					want = append(want, "main "+p.Name)
					continue
				}
				want = append(want, strings.Join([]string{p.Name, p.Version, p.PURL, p.H1}, " "))
			}
			slices.Sort(got)
			slices.Sort(want)
			if len(want) < 4 || !slices.Equal(got, want) {
				t.Errorf("SBOM's Go packages\n%s\nsyft's\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// goSum is the go.sum hash in an SBOM package's comment.
var goSum = regexp.MustCompile(`go\.sum (h1:\S+)`)

// spdxGoPackages are the Go packages of an SPDX document as written:
// "NAME VERSION PURL H1" for each package with a golang purl, and
// "main PATH" for the main module.
func spdxGoPackages(t *testing.T, b []byte, mainPath string) []string {
	t.Helper()
	var doc struct {
		Packages []struct {
			Name         string `json:"name"`
			Version      string `json:"versionInfo"`
			Comment      string `json:"comment"`
			Purpose      string `json:"primaryPackagePurpose"`
			ExternalRefs []struct {
				Type    string `json:"referenceType"`
				Locator string `json:"referenceLocator"`
			} `json:"externalRefs"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range doc.Packages {
		if p.Name == mainPath && p.Purpose == "SOURCE" {
			out = append(out, "main "+p.Name)
			continue
		}
		for _, r := range p.ExternalRefs {
			if r.Type == "purl" && strings.HasPrefix(r.Locator, "pkg:golang/") {
				h1 := ""
				if m := goSum.FindStringSubmatch(p.Comment); m != nil {
					h1 = m[1]
				}
				out = append(out, strings.Join([]string{p.Name, p.Version, r.Locator, h1}, " "))
			}
		}
	}
	return out
}
