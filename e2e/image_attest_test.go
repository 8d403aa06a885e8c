//go:build linux

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	"golang.org/x/mod/modfile"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// checkImageAttested checks what `make image ATTEST_KEY=… IMAGE_PUSH=…`
// (tools/image --attest-key) attached to the pushed index want at ref,
// with the real cosign: the signature, the SLSA provenance
// (--type slsaprovenance1) and the SPDX SBOM (--type spdxjson) verify with
// pub and name the index, as Sigstore bundle referrers and in the tag
// schema; another key is refused.
func checkImageAttested(t *testing.T, pub, ref string, want digest.Digest) {
	if out, err := cosignVerify(t, pub, ref); err != nil {
		t.Fatalf("cosign verify: %v\n%s", err, out)
	}
	var prov struct {
		BuildDefinition struct {
			ExternalParameters struct {
				Version, Revision string
				Platforms         []string
			}
			InternalParameters struct{ Go string }
		}
	}
	imageStatement(t, pub, ref, "slsaprovenance1", "https://slsa.dev/provenance/v1", want, &prov)
	p := prov.BuildDefinition
	if p.ExternalParameters.Revision != imageRevision || p.ExternalParameters.Version != imageVersion ||
		strings.Join(p.ExternalParameters.Platforms, ",") != imagePlatforms || !strings.HasPrefix(p.InternalParameters.Go, "go1.") {
		t.Errorf("provenance %+v", p)
	}
	var sbom spdxSBOM
	imageStatement(t, pub, ref, "spdxjson", "https://spdx.dev/Document", want, &sbom)
	checkSBOM(t, sbom, want)

	// The tag schema too (cosign v2, Kyverno).
	if out, err := cosignVerifyAttestationTagSchema(t, pub, ref, "spdxjson"); err != nil {
		t.Errorf("cosign verify-attestation --new-bundle-format=false --type spdxjson: %v\n%s", err, out)
	}

	_, otherPub := ecdsaKeyPair(t)
	out, err := cosignVerify(t, otherPub, ref)
	refused(t, "the image signed by another key", out, err, "accepted signatures do not match threshold")
	out, err = cosignVerifyTagSchema(t, otherPub, ref)
	refused(t, "the image signed by another key (tag schema)", out, err, "invalid signature")
	out, err = cosignVerifyAttestationType(t, otherPub, ref, "spdxjson")
	refused(t, "the image's SBOM checked with another key", out, err, "accepted signatures do not match threshold")
}

// imageStatement runs cosign verify-attestation --type typ, requires it
// to pass with an attestation of predicateType about want, and decodes
// the predicate into pred.
func imageStatement(t *testing.T, pub, ref, typ, predicateType string, want digest.Digest, pred any) {
	t.Helper()
	out, err := cosignVerifyAttestationType(t, pub, ref, typ)
	if err != nil {
		t.Fatalf("cosign verify-attestation --type %s: %v\n%s", typ, err, out)
	}
	st := attestedStatement(t, out)
	if st.PredicateType != predicateType || "sha256:"+st.Subject[0].Digest["sha256"] != want.String() {
		t.Errorf("--type %s: statement of %s about %v, want %s about %s", typ, st.PredicateType, st.Subject, predicateType, want)
	}
	if err := json.Unmarshal(st.Predicate, pred); err != nil {
		t.Fatal(err)
	}
}

// spdxSBOM is the part of an SPDX 2.3 document the test reads.
type spdxSBOM struct {
	SPDXVersion string
	Packages    []struct {
		SPDXID, Name, VersionInfo string
		ExternalRefs              []struct{ ReferenceType, ReferenceLocator string }
	}
	Relationships []struct{ SpdxElementID, RelationshipType, RelatedSpdxElement string }
}

// checkSBOM requires the SBOM to describe the image and list the Go
// modules the binary links at the versions go.mod requires (oras-go, the
// OpenPGP library, x/crypto), each with a purl, and only relationships
// between packages it lists.
func checkSBOM(t *testing.T, doc spdxSBOM, image digest.Digest) {
	t.Helper()
	if doc.SPDXVersion != "SPDX-2.3" {
		t.Errorf("spdxVersion %q", doc.SPDXVersion)
	}
	ids := map[string]bool{"SPDXRef-DOCUMENT": true}
	versions := map[string]string{}
	for _, p := range doc.Packages {
		if ids[p.SPDXID] {
			t.Errorf("SPDXID %s given twice", p.SPDXID)
		}
		ids[p.SPDXID] = true
		versions[p.Name] = p.VersionInfo
		if len(p.ExternalRefs) == 0 && p.SPDXID != "SPDXRef-Image" {
			t.Errorf("package %s has no purl", p.Name)
		}
	}
	for _, r := range doc.Relationships {
		if !ids[r.SpdxElementID] || !ids[r.RelatedSpdxElement] {
			t.Errorf("relationship %+v names a package the document does not hold", r)
		}
	}
	if versions["stdlib"] != runtime.Version() || versions["github.com/oci-tofu/oci-tofu"] == "" {
		t.Errorf("stdlib %q (want %s), main module %q", versions["stdlib"], runtime.Version(), versions["github.com/oci-tofu/oci-tofu"])
	}
	for _, r := range goModRequires(t) {
		switch r.Mod.Path {
		case "oras.land/oras-go/v2", "github.com/ProtonMail/go-crypto", "golang.org/x/crypto":
			if versions[r.Mod.Path] != r.Mod.Version {
				t.Errorf("SBOM lists %s at %q, go.mod requires %s", r.Mod.Path, versions[r.Mod.Path], r.Mod.Version)
			}
		}
	}
	if !strings.HasSuffix(versions[imageSBOMName(t, doc)], image.String()) {
		t.Errorf("the SBOM's image package is not the index %s", image)
	}
}

// imageSBOMName is the name of the SBOM's image package.
func imageSBOMName(t *testing.T, doc spdxSBOM) string {
	for _, p := range doc.Packages {
		if p.SPDXID == "SPDXRef-Image" {
			return p.Name
		}
	}
	t.Fatal("the SBOM has no image package")
	return ""
}

// goModRequires reads the module's go.mod requirements.
func goModRequires(t *testing.T) []*modfile.Require {
	t.Helper()
	p := filepath.Join(testenv.Root(t), "go.mod")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(p, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f.Require
}
