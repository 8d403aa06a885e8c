package main

import (
	"encoding/json"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The SBOM lists every module of the build information once, replaced
// modules by their replacement, with valid and unique SPDX identifiers,
// and relationships only between packages it holds; it does not depend on
// the order of the build information.
func TestSPDXSBOM(t *testing.T) {
	build := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/oci-tofu/oci-tofu", Version: "(devel)"},
		Deps: []*debug.Module{
			{Path: "oras.land/oras-go/v2", Version: "v2.6.4", Sum: "h1:abc="},
			{Path: "github.com/Foo/bar", Version: "v1.0.0", Replace: &debug.Module{Path: "github.com/fork/bar", Version: "v1.0.1"}},
		},
	}
	in := sbomInput{Image: digest.FromString("index"), Name: "registry.example/oci-tofu", Build: build, Created: time.Unix(1700000000, 0)}
	doc, err := spdxSBOM(in)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(doc)
	build.Deps[0], build.Deps[1] = build.Deps[1], build.Deps[0]
	again, _ := spdxSBOM(in)
	if b2, _ := json.Marshal(again); string(b) != string(b2) {
		t.Error("the order of the build information changes the SBOM")
	}
	idPattern := regexp.MustCompile(`^SPDXRef-[A-Za-z0-9.-]+$`)
	ids := map[string]string{"SPDXRef-DOCUMENT": "document"}
	for _, p := range doc.Packages {
		if !idPattern.MatchString(p.SPDXID) || ids[p.SPDXID] != "" {
			t.Errorf("SPDXID %q is invalid or given twice", p.SPDXID)
		}
		ids[p.SPDXID] = p.Name + "@" + p.VersionInfo
	}
	for _, r := range doc.Relationships {
		if ids[r.Element] == "" || ids[r.Related] == "" {
			t.Errorf("relationship %+v names a package the document lacks", r)
		}
	}
	got := strings.Join(mapValues(ids), " ")
	for _, want := range []string{"oras.land/oras-go/v2@v2.6.4", "github.com/fork/bar@v1.0.1", "stdlib@go1.26.8", "registry.example/oci-tofu@" + in.Image.String()} {
		if !strings.Contains(got, want) {
			t.Errorf("the SBOM lacks %s: %s", want, got)
		}
	}
	if strings.Contains(got, "github.com/Foo/bar") {
		t.Errorf("a replaced module is listed under its original path: %s", got)
	}
	if doc.CreationInfo.Created != "2023-11-14T22:13:20Z" {
		t.Errorf("created %s, want SOURCE_DATE_EPOCH's time", doc.CreationInfo.Created)
	}
	if !strings.Contains(string(b), `"referenceLocator":"pkg:golang/stdlib@1.26.8"`) {
		t.Errorf("the standard library's purl is not as syft and OSV name it: %s", b)
	}
	schemaFile, err := os.Open("../../convert/sbom/testdata/spdx-schema-2.3.json")
	if err != nil {
		t.Fatal(err)
	}
	defer schemaFile.Close()
	schemaDoc, err := jsonschema.UnmarshalJSON(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("spdx-schema-2.3.json", schemaDoc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("spdx-schema-2.3.json")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b))); err != nil {
		t.Fatal(err)
	} else if err := schema.Validate(v); err != nil {
		t.Errorf("the SBOM is invalid by the SPDX 2.3 schema: %v", err)
	}
	if _, err := spdxSBOM(sbomInput{Image: in.Image}); err == nil {
		t.Error("a binary without build information gave an SBOM")
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// --attest-key needs --push: the signature names the registry's repository.
func TestAttestKeyNeedsPush(t *testing.T) {
	if _, err := parseFlags([]string{"--attest-key", "k.pem"}); err == nil || !strings.Contains(err.Error(), "--push") {
		t.Errorf("--attest-key without --push: %v", err)
	}
	if _, err := parseFlags([]string{"--attest-key", "k.pem", "--push", "registry.example/oci-tofu"}); err != nil {
		t.Errorf("--attest-key with --push: %v", err)
	}
}
