package sbom

import (
	"bytes"
	"fmt"
	"net/url"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx/v2/common"
	spdx "github.com/spdx/tools-golang/spdx/v2/v2_3"
	"golang.org/x/mod/module"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// namespacePrefix starts the namespace of every package's SPDX document;
// the zip's digest and file name follow.
const namespacePrefix = "https://oci-tofu.dev/spdx/provider/"

// The SPDX identifiers of the document and of the zip it describes.
const (
	documentID = "DOCUMENT"
	packageID  = "Package"
)

// SPDX is the document as SPDX 2.3 JSON: the same Document gives the same
// bytes.
func (d *Document) SPDX() ([]byte, error) {
	doc, err := d.spdx()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := spdxjson.Write(doc, &buf, spdxjson.EscapeHTML(false)); err != nil {
		return nil, fmt.Errorf("sbom: writing SPDX: %w", err)
	}
	return buf.Bytes(), nil
}

func (d *Document) spdx() (*spdx.Document, error) {
	if d.ZipDigest.Validate() != nil {
		return nil, fmt.Errorf("sbom: the document has no valid zip digest")
	}
	zipHex := d.ZipDigest.Encoded()
	doc := &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    documentID,
		DocumentName:      d.FileName + "@" + d.ZipDigest.String(),
		DocumentNamespace: namespacePrefix + zipHex + "/" + url.PathEscape(d.FileName),
		CreationInfo: &spdx.CreationInfo{
			Creators: []common.Creator{{CreatorType: "Tool", Creator: "oci-tofu"}, {CreatorType: "Organization", Creator: "oci-tofu"}},
			Created:  d.Created.UTC().Format(time.RFC3339),
		},
	}
	zip := &spdx.Package{
		PackageName:             d.Name,
		PackageSPDXIdentifier:   packageID,
		PackageVersion:          d.Version,
		PackageFileName:         d.FileName,
		PackageDownloadLocation: "NOASSERTION",
		PackageChecksums:        []common.Checksum{{Algorithm: common.SHA256, Value: zipHex}},
		PackageComment:          "the provider package for " + d.Platform,
		PrimaryPackagePurpose:   "ARCHIVE",
	}
	doc.Packages = append(doc.Packages, zip)
	rel := func(a common.ElementID, typ string, b common.ElementID) {
		doc.Relationships = append(doc.Relationships, &spdx.Relationship{
			RefA: common.MakeDocElementID("", string(a)), RefB: common.MakeDocElementID("", string(b)), Relationship: typ,
		})
	}
	rel(documentID, common.TypeRelationshipDescribe, packageID)
	for i, e := range d.Executables {
		prefix := "E" + strconv.Itoa(i+1)
		exe := &spdx.Package{
			PackageName:             e.Name,
			PackageSPDXIdentifier:   common.ElementID("Executable-" + strconv.Itoa(i+1) + "-" + idPart(e.Name)),
			PackageVersion:          d.Version,
			PackageFileName:         e.Name,
			PackageDownloadLocation: "NOASSERTION",
			PackageChecksums:        []common.Checksum{{Algorithm: common.SHA256, Value: e.SHA256}},
			PrimaryPackagePurpose:   "APPLICATION",
		}
		doc.Packages = append(doc.Packages, exe)
		rel(packageID, common.TypeRelationshipContains, exe.PackageSPDXIdentifier)
		if e.Go == nil {
			exe.PackageComment = fmt.Sprintf("executable of %d bytes; %s", e.Size, e.NotGo)
			continue
		}
		exe.PackageComment = fmt.Sprintf("executable of %d bytes; Go: its sourceInfo is its build information, as `go version -m` prints it", e.Size)
		exe.PackageSourceInfo = e.Go.BuildInfo().String()
		main := goPackage(prefix+"-Main-"+idPart(e.Go.Main.Path), e.Go.Main, "SOURCE")
		main.PackageComment = strings.TrimPrefix(main.PackageComment+"; the main module of "+e.Name, "; ")
		doc.Packages = append(doc.Packages, main)
		rel(exe.PackageSPDXIdentifier, common.TypeRelationshipContains, main.PackageSPDXIdentifier)
		std := &spdx.Package{
			PackageName:             "stdlib",
			PackageSPDXIdentifier:   common.ElementID(prefix + "-Go-stdlib"),
			PackageVersion:          e.Go.GoVersion,
			PackageDownloadLocation: "NOASSERTION",
			PrimaryPackagePurpose:   "LIBRARY",
			PackageComment:          "the Go standard library, of the toolchain that built " + e.Name,
		}
		if p := StdlibPURL(e.Go.GoVersion); p != "" {
			std.PackageExternalReferences = []*spdx.PackageExternalReference{
				{Category: common.CategorySecurity, RefType: common.TypeSecurityCPE23Type, Locator: "cpe:2.3:a:golang:go:" + stdlibVersion(e.Go.GoVersion) + ":-:*:*:*:*:*:*"},
				{Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL, Locator: p},
			}
		}
		doc.Packages = append(doc.Packages, std)
		rel(main.PackageSPDXIdentifier, common.TypeRelationshipDependsOn, std.PackageSPDXIdentifier)
		for j, m := range e.Go.Deps {
			p := goPackage(prefix+"-Dep-"+strconv.Itoa(j+1)+"-"+idPart(m.Path), m, "LIBRARY")
			doc.Packages = append(doc.Packages, p)
			rel(main.PackageSPDXIdentifier, common.TypeRelationshipDependsOn, p.PackageSPDXIdentifier)
		}
	}
	return doc, nil
}

// goPackage is the SPDX package of a Go module, as built: a replaced
// module is described by its replacement.
func goPackage(id string, m Module, purpose string) *spdx.Package {
	var notes []string
	if m.Replace != nil {
		notes = append(notes, "replaces "+strings.TrimSpace(m.Path+" "+m.Version))
		m = *m.Replace
	}
	p := &spdx.Package{
		PackageName:             m.Path,
		PackageSPDXIdentifier:   common.ElementID(id),
		PackageVersion:          m.Version,
		PackageDownloadLocation: "NOASSERTION",
		PrimaryPackagePurpose:   purpose,
	}
	if m.Sum != "" {
		notes = append(notes, "go.sum "+m.Sum)
	}
	p.PackageComment = strings.Join(notes, "; ")
	if module.Check(m.Path, m.Version) == nil {
		p.PackageExternalReferences = []*spdx.PackageExternalReference{
			{Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL, Locator: "pkg:golang/" + m.Path + "@" + m.Version},
		}
	}
	return p
}

// idChars are the characters an SPDX identifier may not hold (letters,
// digits, "." and "-" are allowed).
var idChars = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// idPart is a readable part of an SPDX identifier made of s; the
// identifiers are unique by their numbers, not by this part.
func idPart(s string) string {
	s = idChars.ReplaceAllString(s, "-")
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// MaxSPDX is the largest SPDX document ParseSPDX reads.
const MaxSPDX = 64 << 20

// ParseSPDX reads back a document SPDX wrote: the described zip, and the
// executables it contains with their build information (from their
// sourceInfo). It checks the document is SPDX (2.3, or earlier converted)
// but not that this package wrote it: what another tool wrote reads as a
// zip of executables without Go build information.
func ParseSPDX(b []byte) (*Document, error) {
	if len(b) > MaxSPDX {
		return nil, fmt.Errorf("sbom: SPDX document of %d bytes, more than the %d accepted", len(b), MaxSPDX)
	}
	if d, ok, err := parseLean(b); ok {
		return d, err
	}
	return parseWithLibrary(b)
}

// parseWithLibrary is ParseSPDX through tools-golang, for any SPDX
// document it reads (other versions converted).
func parseWithLibrary(b []byte) (*Document, error) {
	var doc spdx.Document
	if err := spdxjson.ReadInto(bytes.NewReader(b), &doc); err != nil {
		return nil, fmt.Errorf("sbom: reading SPDX: %w", err)
	}
	return fromSPDX(&doc)
}

// fromSPDX reads the described zip and its executables out of doc.
func fromSPDX(doc *spdx.Document) (*Document, error) {
	pkgs := map[common.ElementID]*spdx.Package{}
	for _, p := range doc.Packages {
		if p != nil {
			pkgs[p.PackageSPDXIdentifier] = p
		}
	}
	var zip *spdx.Package
	for _, r := range doc.Relationships {
		if r != nil && r.Relationship == common.TypeRelationshipDescribe && r.RefA.ElementRefID == doc.SPDXIdentifier && r.RefA.DocumentRefID == "" && zip == nil {
			zip = pkgs[r.RefB.ElementRefID]
		}
	}
	if zip == nil {
		return nil, fmt.Errorf("sbom: the SPDX document describes no package")
	}
	d := &Document{Name: zip.PackageName, Version: zip.PackageVersion, FileName: zip.PackageFileName}
	if f, err := names.ParseProviderFilename(zip.PackageFileName); err == nil && f.Kind == names.ProviderZip {
		d.Platform = f.Platform.String()
	}
	if s := checksum(zip, common.SHA256); s != "" {
		d.ZipDigest = digest.NewDigestFromEncoded(digest.SHA256, s)
		if d.ZipDigest.Validate() != nil {
			return nil, fmt.Errorf("sbom: the package's sha256 %q is invalid", s)
		}
	}
	if doc.CreationInfo != nil {
		t, err := time.Parse(time.RFC3339, doc.CreationInfo.Created)
		if err != nil {
			return nil, fmt.Errorf("sbom: creation time: %w", err)
		}
		d.Created = t
	}
	for _, r := range doc.Relationships {
		if r == nil || r.Relationship != common.TypeRelationshipContains || r.RefA.ElementRefID != zip.PackageSPDXIdentifier || r.RefA.DocumentRefID != "" {
			continue
		}
		p := pkgs[r.RefB.ElementRefID]
		if p == nil {
			continue
		}
		e := Executable{Name: p.PackageFileName, SHA256: checksum(p, common.SHA256)}
		if e.Name == "" {
			e.Name = p.PackageName
		}
		rest, _ := strings.CutPrefix(p.PackageComment, "executable of ")
		if n, after, ok := strings.Cut(rest, " bytes; "); ok {
			e.Size, _ = strconv.ParseInt(n, 10, 64)
			rest = after
		}
		if p.PackageSourceInfo != "" {
			// debug.ParseBuildInfo skips the "go" line String writes
			text := p.PackageSourceInfo
			goVersion := ""
			if line, rest, ok := strings.Cut(text, "\n"); ok && strings.HasPrefix(line, "go\t") {
				goVersion, text = strings.TrimPrefix(line, "go\t"), rest
			}
			bi, err := debug.ParseBuildInfo(text)
			if err != nil {
				return nil, fmt.Errorf("sbom: the build information of %q: %w", e.Name, err)
			}
			bi.GoVersion = goVersion
			e.Go = goBuild(bi)
		} else {
			e.NotGo = rest
		}
		d.Executables = append(d.Executables, e)
	}
	return d, nil
}

func checksum(p *spdx.Package, alg common.ChecksumAlgorithm) string {
	for _, c := range p.PackageChecksums {
		if c.Algorithm == alg {
			return c.Value
		}
	}
	return ""
}
