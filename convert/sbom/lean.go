package sbom

import (
	"encoding/json"
	"strings"

	"github.com/spdx/tools-golang/spdx"
	"github.com/spdx/tools-golang/spdx/v2/common"
)

// Reading SPDX 2.3 JSON fast: tools-golang decodes every field of every
// package into its model (about 4 ms for a provider of 150 modules),
// while reading the stored SBOMs back — `oci-tofu vulns` over thousands
// of them, the gate's decisions — needs only the packages' names,
// checksums, comments and sourceInfo and the relationships. parseLean
// decodes those fields alone, with encoding/json, into the same
// tools-golang types ParseSPDX's library path builds, and hands them to
// the same reading (fromSPDX); a document it cannot take (another SPDX
// version, another shape) goes to the library. TestLeanAgreesWithLibrary
// and FuzzParseSPDX hold both paths to the same answer.

type leanDoc struct {
	SPDXVersion  string `json:"spdxVersion"`
	SPDXID       string `json:"SPDXID"`
	CreationInfo *struct {
		Created string `json:"created"`
	} `json:"creationInfo"`
	Packages []struct {
		SPDXID          string `json:"SPDXID"`
		Name            string `json:"name"`
		VersionInfo     string `json:"versionInfo"`
		PackageFileName string `json:"packageFileName"`
		Checksums       []struct {
			Algorithm string `json:"algorithm"`
			Value     string `json:"checksumValue"`
		} `json:"checksums"`
		SourceInfo string `json:"sourceInfo"`
		Comment    string `json:"comment"`
	} `json:"packages"`
	Relationships []struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	} `json:"relationships"`
}

// parseLean reads an SPDX 2.3 JSON document's fields ParseSPDX uses; ok
// is false for one it leaves to the library.
func parseLean(b []byte) (_ *Document, ok bool, _ error) {
	var l leanDoc
	if err := json.Unmarshal(b, &l); err != nil || l.SPDXVersion != spdx.Version {
		return nil, false, nil
	}
	doc := &spdx.Document{SPDXVersion: l.SPDXVersion}
	var okID bool
	if doc.SPDXIdentifier, okID = elementID(l.SPDXID); !okID {
		return nil, false, nil
	}
	if l.CreationInfo != nil {
		doc.CreationInfo = &spdx.CreationInfo{Created: l.CreationInfo.Created}
	}
	for _, p := range l.Packages {
		id, ok := elementID(p.SPDXID)
		if !ok {
			return nil, false, nil
		}
		pkg := &spdx.Package{PackageSPDXIdentifier: id, PackageName: p.Name, PackageVersion: p.VersionInfo,
			PackageFileName: p.PackageFileName, PackageSourceInfo: p.SourceInfo, PackageComment: p.Comment}
		for _, c := range p.Checksums {
			pkg.PackageChecksums = append(pkg.PackageChecksums, common.Checksum{Algorithm: common.ChecksumAlgorithm(c.Algorithm), Value: c.Value})
		}
		doc.Packages = append(doc.Packages, pkg)
	}
	for _, r := range l.Relationships {
		a, okA := elementID(r.Element)
		b, okB := elementID(r.Related)
		if !okA || !okB {
			return nil, false, nil // another document's elements, NONE, NOASSERTION: the library's
		}
		doc.Relationships = append(doc.Relationships, &spdx.Relationship{
			RefA: common.MakeDocElementID("", string(a)), RefB: common.MakeDocElementID("", string(b)), Relationship: r.Type})
	}
	d, err := fromSPDX(doc)
	return d, true, err
}

// elementID is the element an "SPDXRef-…" names in this document.
func elementID(s string) (common.ElementID, bool) {
	id, ok := strings.CutPrefix(s, "SPDXRef-")
	if !ok || id == "" {
		return "", false
	}
	return common.ElementID(id), true
}
