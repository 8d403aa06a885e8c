package moduledoc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
)

// fromPacked is the Doc of dir packed as push module packs it, read from
// the zip (FromPackage).
func fromPacked(t *testing.T, dir string) *Doc {
	t.Helper()
	z, err := modulepkg.Pack(context.Background(), dir, modulepkg.Options{TempDir: t.TempDir(), AllowNoRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(z.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := FromZip(context.Background(), f, z.Size)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func marshal(t *testing.T, d *Doc) []byte {
	t.Helper()
	b, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every fixture package gives the same bytes from its zip as from its
// directory, and the same bytes twice; ParseDoc reads them back to a Doc
// that marshals to them again.
func TestDocIsDeterministic(t *testing.T) {
	for _, pkg := range fixturePackages(t) {
		t.Run(filepath.Base(pkg), func(t *testing.T) {
			dir, err := FromDir(context.Background(), pkg)
			if err != nil {
				t.Fatal(err)
			}
			again, err := FromDir(context.Background(), pkg)
			if err != nil {
				t.Fatal(err)
			}
			b, zb := marshal(t, dir), marshal(t, fromPacked(t, pkg))
			if !bytes.Equal(b, marshal(t, again)) || !bytes.Equal(b, zb) {
				t.Fatalf("directory:\n%s\nzip:\n%s", b, zb)
			}
			parsed, err := ParseDoc(b)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(marshal(t, parsed), b) {
				t.Fatalf("parsed and marshalled again:\n%s\nwant\n%s", marshal(t, parsed), b)
			}
			for _, r := range dir.READMEs {
				want, err := os.ReadFile(filepath.Join(pkg, r.Path))
				if err != nil || r.Text != string(want) || r.Truncated {
					t.Errorf("README %s: %q (truncated %v), want the file (%v)", r.Path, r.Text, r.Truncated, err)
				}
			}
		})
	}
}

// READMEs are kept to MaxREADMESize each, cut at a UTF-8 boundary, and to
// MaxREADMEsSize in all; invalid UTF-8 is replaced; a README read through
// the zip is the same.
func TestREADMEBounds(t *testing.T) {
	big := strings.Repeat("é", MaxREADMESize) // 2 bytes a rune: cut in the middle of none
	files := map[string]string{
		"main.tf":                  `variable "x" {}`,
		"README.md":                "x" + big, // the cut falls inside an é
		"modules/bad/main.tf":      `variable "y" {}`,
		"modules/bad/README.md":    "a\xffb\xc3",
		"modules/small/main.tf":    `variable "z" {}`,
		"modules/small/README":     "small",
		"examples/e1/main.tf":      `module "m" { source = "../.." }`,
		"examples/e1/README.md":    strings.Repeat("1", MaxREADMESize+10),
		"examples/e2/main.tf":      `module "m" { source = "../.." }`,
		"examples/e2/README.md":    strings.Repeat("2", MaxREADMESize),
		"examples/e3/main.tf":      `module "m" { source = "../.." }`,
		"examples/e3/README.md":    strings.Repeat("3", 100),
		"examples/e4/main.tf":      `module "m" { source = "../.." }`,
		"examples/e4/readme.md":    "lower case",
		"examples/e4/README.txt":   "not preferred",
		"examples/e5/main.tf":      `module "m" { source = "../.." }`,
		"examples/e5/README.md":    "",
		"examples/e6/no-readme.tf": `variable "w" {}`,
	}
	dir := writeFiles(t, files)
	d, err := FromDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(marshal(t, d), marshal(t, fromPacked(t, dir))) {
		t.Fatal("the zip's READMEs differ from the directory's")
	}
	got := map[string]README{}
	total := 0
	for _, r := range d.READMEs {
		got[r.Path] = r
		total += len(r.Text)
		if !utf8.ValidString(r.Text) || len(r.Text) > MaxREADMESize {
			t.Errorf("%s: %d bytes, valid UTF-8 %v", r.Path, len(r.Text), utf8.ValidString(r.Text))
		}
	}
	if total > MaxREADMEsSize {
		t.Errorf("%d bytes of READMEs", total)
	}
	check := func(path, text string, truncated bool) {
		t.Helper()
		r, ok := got[path]
		if !ok || r.Text != text || r.Truncated != truncated {
			t.Errorf("%s: %d bytes %.20q… truncated %v (listed %v); want %d bytes %.20q… truncated %v", path, len(r.Text), r.Text, r.Truncated, ok, len(text), text, truncated)
		}
	}
	check("README.md", "x"+big[:MaxREADMESize-2], true) // 1 + 2×(MaxREADMESize/2 − 1) bytes: the é the cut falls in is left out
	check("modules/bad/README.md", "a\uFFFDb\uFFFD", false)
	check("modules/small/README", "small", false)
	// The root and the submodules took 256 KiB − 1 + 10 bytes; e1 its
	// 256 KiB, e2 its 256 KiB; e3 gets what is left of the 1 MiB.
	check("examples/e1/README.md", strings.Repeat("1", MaxREADMESize), true)
	check("examples/e2/README.md", strings.Repeat("2", MaxREADMESize), false)
	left := MaxREADMEsSize - (MaxREADMESize - 1) - len("a\uFFFDb\uFFFD") - len("small") - 2*MaxREADMESize
	check("examples/e3/README.md", strings.Repeat("3", 100), false)
	check("examples/e4/readme.md", "lower case", false)
	check("examples/e5/README.md", "", false)
	if left < 100 || len(d.READMEs) != 8 {
		t.Errorf("%d bytes left for e3; %d READMEs", left, len(d.READMEs))
	}

	// Past the 1 MiB: cut to what is left, then nothing.
	files["examples/e3/README.md"] = strings.Repeat("3", MaxREADMESize)
	d, err = FromDir(context.Background(), writeFiles(t, files))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range d.READMEs {
		got[r.Path] = r
	}
	check("examples/e3/README.md", strings.Repeat("3", left), true)
	check("examples/e4/readme.md", "", true)
	check("examples/e5/README.md", "", false)
}

func TestTrimPartialRune(t *testing.T) {
	for in, want := range map[string]string{
		"":               "",
		"abc":            "abc",
		"ab\xc3":         "ab",
		"ab\xe2\x82":     "ab",
		"ab\xe2\x82\xac": "ab\xe2\x82\xac",
		"ab\xf0\x9f\x98": "ab",
		"ab\xff":         "ab\xff", // invalid, not cut short: replaced later
		"\x80\x80\x80":   "\x80\x80\x80",
	} {
		if got := string(trimPartialRune([]byte(in))); got != want {
			t.Errorf("trimPartialRune(%q) = %q, want %q", in, got, want)
		}
	}
}

// A Doc whose JSON would pass MaxStoredSize is stored without its README
// texts, and if that is not enough, without its modules' interfaces; a
// diagnostic says which.
func TestDocFitsMaxStoredSize(t *testing.T) {
	module := func(path string, inputs int) Module {
		m := Module{Path: path, README: path + "/README.md"}
		for i := range inputs {
			m.Inputs = append(m.Inputs, Input{Name: strings.Repeat("n", 10), Description: strings.Repeat("d", 1000), Pos: Pos{File: path, Line: i}})
		}
		return m
	}
	readmes := func(n int) []README {
		var out []README
		for i := range n {
			out = append(out, README{Path: "x/README.md", Text: strings.Repeat("r", MaxREADMESize-i)})
		}
		return out
	}
	// 3 MiB of inputs and 1 MiB of READMEs: the READMEs go.
	d := &Doc{Format: Format, Package: Package{Root: module("", 3000)}, READMEs: readmes(4)}
	if err := d.fit(); err != nil {
		t.Fatal(err)
	}
	b := marshal(t, d)
	if len(b) > MaxStoredSize || len(d.Package.Root.Inputs) != 3000 || d.READMEs[0].Text != "" || !d.READMEs[0].Truncated {
		t.Fatalf("%d bytes, %d inputs, README %d bytes", len(b), len(d.Package.Root.Inputs), len(d.READMEs[0].Text))
	}
	wantDiag(t, d.Package.Diagnostics, "Interface too large", "")

	// 5 MiB of inputs: the modules' interfaces go too.
	d = &Doc{Format: Format, Package: Package{Root: module("", 2500), Submodules: []Module{module("modules/a", 2500)}}, READMEs: readmes(1)}
	if err := d.fit(); err != nil {
		t.Fatal(err)
	}
	b = marshal(t, d)
	diag := wantDiag(t, d.Package.Diagnostics, "Interface too large", "")
	if len(b) > MaxStoredSize || len(d.Package.Root.Inputs) != 0 || d.Package.Submodules[0].Path != "modules/a" || d.Package.Submodules[0].README != "modules/a/README.md" ||
		!strings.Contains(diag.Detail, "interfaces are left out") || len(d.Package.Diagnostics) != 1 {
		t.Fatalf("%d bytes: %s", len(b), b[:min(len(b), 2000)])
	}

	// Marshal refuses a larger Doc it is given.
	d = &Doc{Format: Format, Package: Package{Root: module("", 5000)}}
	if _, err := d.Marshal(); err == nil {
		t.Fatal("Marshal of a Doc larger than MaxStoredSize")
	}
}

func TestParseDocRefuses(t *testing.T) {
	for name, b := range map[string][]byte{
		"not JSON":       []byte(`{"format": 1,`),
		"no format":      []byte(`{"package": {}}`),
		"a later format": []byte(`{"format": 2}`),
		"too large":      append(append([]byte(`{"format": 1, "readmes": [{"text": "`), bytes.Repeat([]byte("x"), MaxDocSize)...), `"}]}`...),
	} {
		if _, err := ParseDoc(b); err == nil {
			t.Errorf("%s: parsed", name)
		} else if name == "a later format" && !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
