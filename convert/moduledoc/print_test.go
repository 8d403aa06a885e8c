package moduledoc

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// Print shows each module's inputs (type as written on one line, the
// default converted, required), outputs, providers, module calls and
// resources, the root's first, then the submodules' and examples'.
func TestPrint(t *testing.T) {
	d, err := FromDir(context.Background(), filepath.Join("testdata", "modules", "features"))
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := d.Print(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	fields := func(line string) string { return strings.Join(strings.Fields(line), " ") }
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		lines = append(lines, fields(l))
		if strings.HasSuffix(l, " ") {
			t.Errorf("trailing space: %q", l)
		}
	}
	has := func(want string) {
		t.Helper()
		for _, l := range lines {
			if strings.HasPrefix(l, want) {
				return
			}
		}
		t.Errorf("no line starting %q in\n%s", want, text)
	}
	has("Root module (README.md)")
	has("NAME TYPE DEFAULT REQUIRED DESCRIPTION")
	has(`name string "demo" no The name of everything.`)
	has("plain any - yes")
	has(`settings object({ size = optional(number, 3) zones = optional(list(st… {"enabled":true,"labels":null,"nested":{… no Settings, with optional attributes and their defaults.`)
	has(`rules list(object({ port = number protocol = optional(string, "tcp… [{"port":80,"protocol":"tcp"},{"port":44… no`)
	has("derived (ephemeral)")
	has("features ../..")
	has("terraform terraform.io/builtin/terraform")
	has("password string - yes")
	has("Submodule modules/network")
	has("Example examples/basic")
	if strings.Index(text, "Root module") > strings.Index(text, "Submodule") || strings.Index(text, "Submodule") > strings.Index(text, "Example") {
		t.Errorf("modules out of order:\n%s", text)
	}
}

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 0, "plain"},
		{"  two\n\tlines  ", 0, "two lines"},
		{"\x1b[31mred\x1b[0m", 0, "[31mred [0m"},
		{"a\u202eb\u0085c", 0, "a b c"},
		{"abcdef", 3, "abc…"},
		{"abc", 3, "abc"},
		{"ééé", 2, "éé…"},
	} {
		if got := clean(tc.in, tc.max); got != tc.want {
			t.Errorf("clean(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
