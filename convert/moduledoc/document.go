package moduledoc

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
)

// ArtifactType is the artifact type of the referrer that stores a module
// package's interface beside its module manifest, and the media type of
// its one layer, the Doc's JSON (docs/artifacts.md, "Module interfaces").
const ArtifactType = "application/vnd.oci-tofu.module.doc.v1+json"

// Format is the version of the Doc this package writes, the only one it
// reads.
const Format = 1

// Bounds of a Doc (docs/catalogue.md).
const (
	// MaxREADMESize bounds the text kept of one README; the rest is cut,
	// at a UTF-8 boundary.
	MaxREADMESize = 256 << 10
	// MaxREADMEsSize bounds the README text kept of one package, in all.
	MaxREADMEsSize = 1 << 20
	// MaxStoredSize bounds the JSON of a Doc made here (FromZip, FromDir):
	// a larger one is stored without its README texts, and if still too
	// large, without its modules' interfaces (a diagnostic says so).
	MaxStoredSize = 4 << 20
	// MaxDocSize bounds a Doc read (ParseDoc, Read).
	MaxDocSize = 8 << 20
)

// Doc is what is stored beside a module package: its interface, as
// Extract reads it, and the text of its READMEs. The same package gives
// the same Doc and the same JSON bytes (Marshal): nothing in it says when
// it was made.
type Doc struct {
	// Format is the document's version (Format).
	Format  int      `json:"format"`
	Package Package  `json:"package"`
	READMEs []README `json:"readmes"`
}

// README is the README of the root module, a submodule or an example:
// the file its Module.README names.
type README struct {
	// Path is from the package root (Module.README).
	Path string `json:"path"`
	// Text is valid UTF-8 (invalid bytes replaced with U+FFFD), at most
	// MaxREADMESize bytes, and the READMEs' texts MaxREADMEsSize in all.
	Text string `json:"text"`
	// Truncated is set when Text is not the whole file.
	Truncated bool `json:"truncated"`
}

// FromZip extracts the interface of the module zip r (size bytes) and
// reads its READMEs. Problems in the package are diagnostics in the Doc;
// the error is the context's, or r's when it is no zip.
func FromZip(ctx context.Context, r io.ReaderAt, size int64) (*Doc, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("reading the module zip: %w", err)
	}
	p, err := Extract(ctx, zr)
	if err != nil {
		return nil, err
	}
	return newDoc(ctx, zr, p)
}

// FromDir extracts the interface of the module directory dir as `push
// module` packs it (ExtractDir) and reads its READMEs. The error is the
// context's, or dir's when it cannot be opened.
func FromDir(ctx context.Context, dir string) (*Doc, error) {
	p, err := ExtractDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return newDoc(ctx, root.FS(), p)
}

// FromPackage extracts the interface of p, a package made ready to push
// (modulepkg.Prepare): from its zip (FromZip), or from its directory
// when it is Unchanged and no zip was packed (FromDir).
func FromPackage(ctx context.Context, p *modulepkg.Package) (*Doc, error) {
	path := p.ZipPath()
	if path == "" {
		return FromDir(ctx, p.Source)
	}
	f, err := localfile.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return FromZip(ctx, f, fi.Size())
}

// newDoc is p's Doc with its READMEs read from fsys, made to fit
// MaxStoredSize.
func newDoc(ctx context.Context, fsys fs.FS, p *Package) (*Doc, error) {
	d := &Doc{Format: Format, Package: *p}
	var err error
	if d.READMEs, err = readREADMEs(ctx, fsys, &d.Package); err != nil {
		return nil, err
	}
	if err := d.fit(); err != nil {
		return nil, err
	}
	return d, nil
}

// readREADMEs reads the README of each module of p that has one, within
// the bounds; one that cannot be read is a diagnostic of the package.
func readREADMEs(ctx context.Context, fsys fs.FS, p *Package) ([]README, error) {
	out := []README{}
	left := MaxREADMEsSize
	for _, m := range p.modules() {
		if m.README == "" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		text, truncated, err := readText(fsys, m.README, min(MaxREADMESize, left))
		if err != nil {
			if len(p.Diagnostics) < MaxDiagnostics {
				p.Diagnostics = append(p.Diagnostics, errorDiag("Unreadable README", fmt.Sprintf("%s: %v", m.README, err), &Pos{File: m.README}))
			}
			continue
		}
		left -= len(text)
		out = append(out, README{Path: m.README, Text: text, Truncated: truncated})
	}
	return out, nil
}

// readText reads at most limit bytes of the file name as valid UTF-8,
// cut at a rune boundary; truncated is set when the file holds more.
func readText(fsys fs.FS, name string, limit int) (text string, truncated bool, err error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return "", false, err
	}
	if len(b) > limit {
		b, truncated = trimPartialRune(b[:limit]), true
	}
	s := strings.ToValidUTF8(string(b), string(utf8.RuneError))
	if len(s) > limit { // replacements are longer than the bytes they replace
		s, truncated = cutAtRune(s, limit), true
	}
	return s, truncated, nil
}

// trimPartialRune drops the start of a rune that b, cut short, ends
// with, so that the cut does not become a replacement character.
func trimPartialRune(b []byte) []byte {
	for i := 1; i < utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

// cutAtRune is the longest prefix of the valid UTF-8 s of at most n bytes
// that ends at a rune boundary.
func cutAtRune(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// fit makes d's JSON at most MaxStoredSize: without the README texts if
// need be, then without the modules' interfaces (paths and READMEs kept),
// a package diagnostic saying what was left out.
func (d *Doc) fit() error {
	b, err := d.encode()
	if err != nil || len(b) <= MaxStoredSize {
		return err
	}
	for i := range d.READMEs {
		d.READMEs[i].Text, d.READMEs[i].Truncated = "", true
	}
	d.Package.Diagnostics = append(d.Package.Diagnostics, errorDiag("Interface too large",
		fmt.Sprintf("its document would be larger than %d bytes; the READMEs' texts are left out", MaxStoredSize), nil))
	if b, err = d.encode(); err != nil || len(b) <= MaxStoredSize {
		return err
	}
	for _, m := range d.Package.modules() {
		*m = Module{Path: m.Path, README: m.README, Files: []string{}, Inputs: []Input{}, Outputs: []Output{}, RequiredCore: []string{},
			RequiredProviders: []ProviderRequirement{}, ModuleCalls: []ModuleCall{}, Resources: []Resource{}, Diagnostics: []Diagnostic{}}
	}
	last := &d.Package.Diagnostics[len(d.Package.Diagnostics)-1]
	last.Detail = fmt.Sprintf("its document would be larger than %d bytes; the READMEs' texts and the modules' interfaces are left out", MaxStoredSize)
	_, err = d.Marshal()
	return err
}

// Marshal is d's JSON: the same Doc, the same bytes (HTML characters not
// escaped, no indentation). A Doc larger than MaxStoredSize is refused.
func (d *Doc) Marshal() ([]byte, error) {
	b, err := d.encode()
	if err != nil {
		return nil, err
	}
	if len(b) > MaxStoredSize {
		return nil, fmt.Errorf("the interface document is %d bytes, more than the %d stored", len(b), MaxStoredSize)
	}
	return b, nil
}

func (d *Doc) encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ErrFormat is in ParseDoc's error for a document of a format this
// version does not read.
var ErrFormat = errors.New("not a format this version reads")

// ParseDoc reads a Doc's JSON, at most MaxDocSize bytes, of Format.
func ParseDoc(b []byte) (*Doc, error) {
	if len(b) > MaxDocSize {
		return nil, fmt.Errorf("the interface document is %d bytes, more than the %d read", len(b), MaxDocSize)
	}
	var d Doc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("the interface document: %w", err)
	}
	if d.Format != Format {
		return nil, fmt.Errorf("the interface document's format %d: %w (it reads %d)", d.Format, ErrFormat, Format)
	}
	return &d, nil
}
