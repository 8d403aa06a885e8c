package providerdocs_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
)

// writeTree writes files (path from dir → content) under a new
// directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const thingPage = `---
page_title: "widgets_thing Resource - widgets"
subcategory: "Things"
description: |-
  Manages a thing.
---

# widgets_thing (Resource)

See [the data source](../data-sources/thing.md).
`

// The registry's layout: the overview, each category's pages with their
// front matter, ordered by category then name; other files and
// directories skipped and listed.
func TestReadDirModernLayout(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"index.md":                  "# Widgets Provider\n\nUse it.\n",
		"resources/thing.md":        thingPage,
		"resources/another.md":      "no front matter, no heading",
		"data-sources/thing.md":     "---\npage_title: thing\n---\nbody",
		"functions/parse_id.md":     "---\npage_title: \"parse_id function\"\n---\n",
		"guides/getting-started.md": "# Getting started\n",
		"ephemeral-resources/x.md":  "# x\n",
		"resources/logo.png":        "PNG",
		"cdktf/python/r/thing.md":   "# other language",
		"README.txt":                "not a page",
	})
	d, err := providerdocs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range d.Pages {
		got = append(got, p.Category+"/"+p.Slug+" "+p.Title+" ["+p.Subcategory+"]")
	}
	want := []string{
		"index/index Widgets Provider []",
		"guides/getting-started Getting started []",
		"resources/another another []",
		"resources/thing widgets_thing Resource - widgets [Things]",
		"data-sources/thing thing []",
		"ephemeral-resources/x x []",
		"functions/parse_id parse_id function []",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("pages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	thing := d.Find("resources", "thing")
	if thing.Description != "Manages a thing." || strings.Contains(thing.Markdown, "page_title") || !strings.HasPrefix(thing.Markdown, "\n# widgets_thing") || thing.Path != "resources/thing.md" {
		t.Errorf("thing: %+v", thing)
	}
	if s := strings.Join(d.Skipped, " "); s != "README.txt cdktf/ resources/logo.png" {
		t.Errorf("skipped %q", s)
	}
	if p := d.Resolve("data-sources/thing.md"); p == nil || p.Category != "data-sources" {
		t.Errorf("Resolve(data-sources/thing.md) = %+v", p)
	}
	if p := d.Resolve("resources/nothing"); p != nil {
		t.Errorf("Resolve(resources/nothing) = %+v", p)
	}
}

// The legacy website/docs layout: r/ and d/, *.html.markdown.
func TestReadDirLegacyLayout(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"index.html.markdown":   "---\nlayout: \"widgets\"\npage_title: \"Provider: Widgets\"\n---\n# Widgets\n",
		"r/thing.html.markdown": "---\npage_title: \"widgets_thing\"\n---\n[ds](/docs/providers/widgets/d/thing.html)\n",
		"d/thing.html.md":       "# data thing\n",
	})
	d, err := providerdocs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range d.Pages {
		got = append(got, p.Category+"/"+p.Slug+" "+p.Title+" "+p.Path)
	}
	want := "index/index Provider: Widgets index.html.markdown,resources/thing widgets_thing r/thing.html.markdown,data-sources/thing data thing d/thing.html.md"
	if strings.Join(got, ",") != want {
		t.Errorf("pages %q\nwant %q", strings.Join(got, ","), want)
	}
	if p := d.Resolve("d/thing.html"); p == nil || p.Category != "data-sources" {
		t.Errorf("Resolve(d/thing.html) = %+v", p)
	}
}

// aliasBomb is YAML whose aliases expand to 10^9 strings.
const aliasBomb = `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
page_title: *i
`

// What refuses a whole tree, naming the file.
func TestReadDirRefuses(t *testing.T) {
	big := strings.Repeat("x", providerdocs.MaxPageSize+1)
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no page", map[string]string{"notes.txt": "x"}, "holds no documentation page"},
		{"bad name", map[string]string{"resources/a b.md": "x"}, `"a b" is not a page name`},
		{"dot name", map[string]string{"resources/.hidden.md": "x"}, "is not a page name"},
		{"dots", map[string]string{"resources/a..b.md": "x"}, "is not a page name"},
		{"two files, one page", map[string]string{"r/thing.html.markdown": "x", "resources/thing.md": "y"}, "are both the resources page thing"},
		{"too large", map[string]string{"resources/big.md": big}, "larger than 1048576 bytes"},
		{"not UTF-8", map[string]string{"resources/bin.md": "\xff\xfe"}, "is not UTF-8"},
		{"NUL", map[string]string{"resources/nul.md": "a\x00b"}, "NUL byte"},
		{"unclosed front matter", map[string]string{"resources/x.md": "---\npage_title: x\n"}, "no closing --- line"},
		{"front matter not YAML", map[string]string{"resources/x.md": "---\npage_title: [x\n---\n"}, "front matter is not YAML"},
		{"alias bomb", map[string]string{"resources/x.md": "---\n" + aliasBomb + "---\n"}, "front matter is not YAML"},
		{"long front matter", map[string]string{"resources/x.md": "---\ndescription: " + strings.Repeat("y", providerdocs.MaxFrontMatter) + "\n---\n"}, "front matter is longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := providerdocs.ReadDir(writeTree(t, tc.files))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// The total and the page count are bounded.
func TestReadDirBounds(t *testing.T) {
	files := map[string]string{}
	page := strings.Repeat("y", providerdocs.MaxPageSize-1)
	for i := range providerdocs.MaxTotalSize/providerdocs.MaxPageSize + 1 {
		files["resources/p"+strconv.Itoa(i)+".md"] = page
	}
	if _, err := providerdocs.ReadDir(writeTree(t, files)); err == nil || !strings.Contains(err.Error(), "add up to more than") {
		t.Errorf("total: %v", err)
	}
	files = map[string]string{}
	for i := range providerdocs.MaxPages + 1 {
		files["guides/g"+strconv.Itoa(i)+".md"] = "x"
	}
	if _, err := providerdocs.ReadDir(writeTree(t, files)); err == nil || !strings.Contains(err.Error(), "more than 4096 pages") {
		t.Errorf("pages: %v", err)
	}
}

// A symbolic link inside the tree is followed; one leading out of it
// refuses the tree.
func TestReadDirSymlinks(t *testing.T) {
	dir := writeTree(t, map[string]string{"resources/thing.md": "# thing\n", "shared/data.md": "# data\n"})
	if err := os.Symlink("shared", filepath.Join(dir, "data-sources")); err != nil {
		t.Fatal(err)
	}
	d, err := providerdocs.ReadDir(dir)
	if err != nil || d.Find("data-sources", "data") == nil {
		t.Fatalf("a link inside: %v %+v", err, d)
	}
	outside := writeTree(t, map[string]string{"secret.md": "# secret\n"})
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(dir, "resources", "leak.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := providerdocs.ReadDir(dir); err == nil || !strings.Contains(err.Error(), "symbolic link that does not lead to a file inside") {
		t.Errorf("a link out: %v", err)
	}
	dir2 := writeTree(t, map[string]string{"index.md": "# x\n"})
	if err := os.Symlink(outside, filepath.Join(dir2, "guides")); err != nil {
		t.Fatal(err)
	}
	if _, err := providerdocs.ReadDir(dir2); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a directory link out: %v", err)
	}
}
