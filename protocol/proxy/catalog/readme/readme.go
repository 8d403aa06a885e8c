// Package readme renders a module package's README for the proxy's
// catalogue, safely: CommonMark with GitHub's tables, strikethrough,
// autolinks and task lists, without raw HTML, with every link and image
// destination rewritten so that relative ones resolve inside the package
// and nothing is fetched from elsewhere. docs/catalogue.md ("README
// rendering") says what is kept, dropped and resolved.
package readme

import (
	"bytes"
	"html/template"
	"path"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Options say how links inside the package are resolved.
type Options struct {
	// Dir is the README's directory in the package ("" for the root,
	// "modules/vpc", ...).
	Dir string
	// Link maps a path inside the package (slash-separated, cleaned, from
	// the package root; never starting with "/" or ".."; "" for the root)
	// to the URL of the catalogue page that shows it (a submodule's or
	// example's page), or "" when the catalogue shows no page for it.
	Link func(pkgPath string) string
	// Image maps a path inside the package to a URL the page may load it
	// from, or "" (then the image is shown as its alt text, with the
	// path).
	Image func(pkgPath string) string
}

const (
	// MaxSize is the most of a README that is rendered; the rest is cut.
	MaxSize = 512 << 10
	// cutNote closes a README cut at MaxSize.
	cutNote = `<p><em>(README cut at 512 KiB)</em></p>` + "\n"
	// IDPrefix starts every heading id, so that none collides with the
	// page's own ids; fragment links are rewritten to match.
	IDPrefix = "readme-"
)

// markdown is the one parser and renderer; it keeps no state between
// calls (each call's state is in its parser.Context).
var markdown = newMarkdown()

func newMarkdown() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithParser(parser.NewParser(
			parser.WithBlockParsers(blockParsers()...),
			parser.WithInlineParsers(inlineParsers()...),
			parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
			parser.WithAutoHeadingID(),
		)),
		goldmark.WithRenderer(renderer.NewRenderer(
			renderer.WithNodeRenderers(util.Prioritized(html.NewRenderer(), 1000)),
		)),
		// GitHub's extensions (extension.GFM), its table bounded.
		goldmark.WithExtensions(gfm{}),
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(&rewriter{}, 1000))),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(safeRenderer{}, 1))),
	)
}

// Render renders markdown (CommonMark + GitHub tables, strikethrough,
// autolinks, task lists) as safe HTML. Input above MaxSize is cut at a
// UTF-8 boundary, with a closing note.
func Render(markdown []byte, o Options) template.HTML {
	src, cut := cutAt(markdown, MaxSize)
	o.Dir = cleanDir(o.Dir)
	var out bytes.Buffer
	out.Grow(len(src) + len(src)/2)
	render(&out, src, &o)
	safe := allowList.SanitizeReader(&out)
	if cut {
		safe.WriteString(cutNote)
	}
	return template.HTML(safe.String()) // #nosec G203 -- rendered from the rewritten tree, then allow-listed
}

// render parses src with this call's state in a fresh context and writes
// its HTML to out.
func render(out *bytes.Buffer, src []byte, o *Options) {
	pc := parser.NewContext(parser.WithIDs(newPrefixedIDs()))
	pc.Set(optionsKey, o)
	doc := markdown.Parser().Parse(text.NewReader(src), parser.WithContext(pc))
	// The renderer writes to a bytes.Buffer, whose writes never fail.
	_ = markdown.Renderer().Render(out, src, doc)
}

// cutAt returns the first max bytes of b or fewer, ending at a UTF-8
// boundary, and whether anything was cut.
func cutAt(b []byte, max int) ([]byte, bool) {
	if len(b) <= max {
		return b, false
	}
	end := max
	for end > 0 && end > max-utf8.UTFMax && !utf8.RuneStart(b[end]) {
		end--
	}
	return b[:end], true
}

// cleanDir is Options.Dir cleaned, "" for the root.
func cleanDir(dir string) string {
	dir = path.Clean("/" + dir)[1:]
	return dir
}
