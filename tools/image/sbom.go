package main

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/sbom"
)

// SPDXPredicateType is the predicate type of an SPDX SBOM attestation:
// `cosign verify-attestation --type spdxjson` asks for it.
const SPDXPredicateType = sbom.SPDXPredicateType

// spdxDocument is an SPDX 2.3 document in its JSON form, with the fields
// an SBOM of Go module dependencies needs (the SPDX 2.3 specification,
// clauses 6 "Document creation information", 7 "Package information"
// and 11 "Relationships").
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID           string            `json:"SPDXID"`
	Name             string            `json:"name"`
	VersionInfo      string            `json:"versionInfo,omitempty"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	PrimaryPurpose   string            `json:"primaryPackagePurpose,omitempty"`
	Checksums        []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
	Comment          string            `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type spdxExternalRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// sbomInput is what the SBOM describes: the image (its index digest and
// name), the binary's build information (the same module graph for every
// platform: `go version -m` prints it), and the build time.
type sbomInput struct {
	Image   digest.Digest
	Name    string
	Build   *debug.BuildInfo
	Created time.Time
}

// spdxSBOM is the SPDX document for the image: the image itself, the
// oci-tofu main module it runs, the Go standard library it was built
// with, and each Go module the binary links (with its go.sum h1 hash in
// the comment: SPDX has no algorithm for it). Built from the binary's
// embedded build information alone, so it lists what is in the binary,
// not what go.mod mentions.
func spdxSBOM(in sbomInput) (*spdxDocument, error) {
	if in.Build == nil {
		return nil, fmt.Errorf("the binary carries no Go build information")
	}
	doc := &spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              in.Name + "@" + in.Image.String(),
		DocumentNamespace: "https://oci-tofu.dev/spdx/image/" + in.Image.Encoded(),
		CreationInfo: spdxCreationInfo{
			Created:  in.Created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: oci-tofu-tools-image", "Organization: oci-tofu"},
		},
	}
	image := spdxPackage{
		SPDXID: "SPDXRef-Image", Name: in.Name, VersionInfo: in.Image.String(),
		DownloadLocation: "NOASSERTION", PrimaryPurpose: "CONTAINER",
		Checksums: []spdxChecksum{{Algorithm: "SHA256", Value: in.Image.Encoded()}},
	}
	doc.Packages = append(doc.Packages, image)
	doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", image.SPDXID})
	main := goPackage(in.Build.Main, "APPLICATION")
	stdlib := spdxPackage{
		SPDXID: "SPDXRef-Go-stdlib", Name: "stdlib", VersionInfo: in.Build.GoVersion,
		DownloadLocation: "https://go.dev/dl/", PrimaryPurpose: "LIBRARY",
	}
	if p := sbom.StdlibPURL(in.Build.GoVersion); p != "" {
		// as convert/sbom names it, for the vulnerability scanners
		stdlib.ExternalRefs = []spdxExternalRef{purl(p)}
	}
	doc.Packages = append(doc.Packages, main, stdlib)
	doc.Relationships = append(doc.Relationships,
		spdxRelationship{image.SPDXID, "CONTAINS", main.SPDXID},
		spdxRelationship{main.SPDXID, "DEPENDS_ON", stdlib.SPDXID})
	for _, m := range sortedDeps(in.Build.Deps) {
		p := goPackage(*m, "LIBRARY")
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, spdxRelationship{main.SPDXID, "DEPENDS_ON", p.SPDXID})
	}
	return doc, nil
}

// goPackage is the SPDX package of a Go module, as built: a replaced
// module is described by its replacement.
func goPackage(m debug.Module, purpose string) spdxPackage {
	if m.Replace != nil {
		m = *m.Replace
	}
	p := spdxPackage{
		SPDXID:           "SPDXRef-Go-" + spdxIDChars.ReplaceAllString(m.Path+"-"+m.Version, "-"),
		Name:             m.Path,
		VersionInfo:      m.Version,
		DownloadLocation: "NOASSERTION",
		PrimaryPurpose:   purpose,
		ExternalRefs:     []spdxExternalRef{purl("pkg:golang/" + m.Path + "@" + m.Version)},
	}
	if m.Version != "" && m.Version != "(devel)" {
		p.DownloadLocation = "https://proxy.golang.org/" + strings.ToLower(m.Path) + "/@v/" + m.Version + ".zip"
	}
	if m.Sum != "" {
		p.Comment = "go.sum " + m.Sum
	}
	return p
}

// spdxIDChars are the characters an SPDX identifier may not hold
// (letters, digits, "." and "-" are allowed).
var spdxIDChars = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func purl(locator string) spdxExternalRef {
	return spdxExternalRef{Category: "PACKAGE-MANAGER", Type: "purl", Locator: locator}
}

// sortedDeps orders the modules by path, so the document does not depend
// on the order the linker recorded them in.
func sortedDeps(deps []*debug.Module) []*debug.Module {
	out := slices.Clone(deps)
	slices.SortFunc(out, func(a, b *debug.Module) int { return strings.Compare(a.Path, b.Path) })
	return out
}
