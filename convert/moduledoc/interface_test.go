package moduledoc

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestFieldsTofuDoesNotPrint checks what tofu show -json -config leaves
// out (nullable, validation messages, types as written, READMEs,
// positions, provider references), on the features and providers
// fixtures.
func TestFieldsTofuDoesNotPrint(t *testing.T) {
	p := extractClean(t, filepath.Join("testdata", "modules", "features"))
	inputs := map[string]Input{}
	for _, in := range p.Root.Inputs {
		inputs[in.Name] = in
	}
	pw := inputs["password"]
	if pw.Nullable || !pw.Sensitive || !pw.Required {
		t.Errorf("password: %+v", pw)
	}
	wantValidations := []string{
		"The password must have at least 12 characters.",
		`"The password must contain a digit, not ${length(var.password)} letters."`,
	}
	compareField(t, "password validations", pw.Validations, wantValidations)
	if !inputs["counts"].Nullable || !inputs["plain"].Nullable {
		t.Error("nullable is not true by default")
	}
	if !inputs["environment"].Const || inputs["name"].Const {
		t.Error("const")
	}
	compareField(t, "pair type", inputs["pair"].Type, "tuple([string, number, bool])")
	compareField(t, "keyword_list type", inputs["keyword_list"].Type, "list")
	compareField(t, "plain type", inputs["plain"].Type, "")
	if !strings.HasPrefix(inputs["settings"].Type, "object({\n    size    = optional(number, 3)") {
		t.Errorf("settings type as written: %q", inputs["settings"].Type)
	}
	compareField(t, "name pos", inputs["name"].Pos, Pos{File: "variables.tf", Line: 5})
	compareField(t, "readme", p.Root.README, "README.md")
	compareField(t, "required_core", p.Root.RequiredCore, []string{">= 1.9.0"})
	var paths []string
	for _, m := range append(p.Submodules, p.Examples...) {
		paths = append(paths, m.Path)
	}
	compareField(t, "module paths", paths, []string{"modules/network", "modules/secrets", "examples/basic"})
	compareField(t, "network validations", p.Submodules[0].Inputs[0].Validations, []string{"Must be a CIDR range."})

	pr := extractClean(t, filepath.Join("testdata", "modules", "providers"))
	byAddr := map[string]Resource{}
	for _, r := range pr.Root.Resources {
		byAddr[r.Address] = r
	}
	compareField(t, "subnet provider", byAddr["aws_subnet.east"].Provider, "aws")
	compareField(t, "zone", byAddr["data.cloud_zone.z"], Resource{Address: "data.cloud_zone.z", Mode: "data", Type: "cloud_zone", Name: "z", Provider: "cloud", Pos: Pos{File: "main.tf", Line: 35}})
	compareField(t, "ephemeral", byAddr["ephemeral.aws_secret.token"].Mode, "ephemeral")
}

// TestJSONFieldNames pins the JSON field names consumers rely on.
func TestJSONFieldNames(t *testing.T) {
	p := extractClean(t, filepath.Join("testdata", "modules", "features"))
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(v any) []string {
		var out []string
		for k := range v.(map[string]any) {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	root := doc["root"].(map[string]any)
	compareField(t, "package", keys(doc), []string{"diagnostics", "examples", "root", "submodules"})
	compareField(t, "module", keys(root), []string{"diagnostics", "files", "inputs", "module_calls", "outputs", "path", "readme", "required_core", "required_providers", "resources"})
	var settings map[string]any
	for _, in := range root["inputs"].([]any) {
		if in.(map[string]any)["name"] == "settings" {
			settings = in.(map[string]any)
		}
	}
	compareField(t, "input", keys(settings), []string{"const", "default", "deprecated", "description", "ephemeral", "name", "nullable", "pos", "required", "sensitive", "type", "type_json", "validations"})
	compareField(t, "output", keys(root["outputs"].([]any)[0]), []string{"deprecated", "description", "ephemeral", "name", "pos", "sensitive"})
	compareField(t, "module call", keys(root["module_calls"].([]any)[0]), []string{"name", "pos", "source", "version"})
	compareField(t, "resource", keys(root["resources"].([]any)[0]), []string{"address", "mode", "name", "pos", "provider", "type"})
	if !reflect.DeepEqual(p.Root.Inputs[0].Validations, []string{}) {
		t.Errorf("validations of an input without any: %#v (want [] in JSON, not null)", p.Root.Inputs[0].Validations)
	}
}
