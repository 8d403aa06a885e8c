package readme

import (
	"bytes"
	"html"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// safeLink is a link the rewriter kept, to href (already checked).
type safeLink struct {
	ast.BaseInline
	href, title string
	external    bool // rel="nofollow noopener noreferrer"
}

var kindSafeLink = ast.NewNodeKind("ReadmeLink")

func (n *safeLink) Kind() ast.NodeKind { return kindSafeLink }

func (n *safeLink) Dump(source []byte, level int) {
	ast.DumpHelper(n, source, level, map[string]string{"Href": n.href}, nil)
}

// safeImage is an image inside the package, loaded from src.
type safeImage struct {
	ast.BaseInline
	src, alt, title string
}

var kindSafeImage = ast.NewNodeKind("ReadmeImage")

func (n *safeImage) Kind() ast.NodeKind { return kindSafeImage }

func (n *safeImage) Dump(source []byte, level int) {
	ast.DumpHelper(n, source, level, map[string]string{"Src": n.src}, nil)
}

// safeRenderer renders safeLink and safeImage, and fails closed on the
// nodes the rewriter replaces or removes, should one be left: a link as
// its text, an autolink as its label, an image or raw HTML as nothing.
type safeRenderer struct{}

func (safeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(kindSafeLink, renderSafeLink)
	reg.Register(kindSafeImage, renderSafeImage)
	reg.Register(ast.KindLink, renderContentOnly)
	reg.Register(ast.KindAutoLink, renderAutoLinkLabel)
	reg.Register(ast.KindImage, renderNothing)
	reg.Register(ast.KindRawHTML, renderNothing)
	reg.Register(ast.KindHTMLBlock, renderNothing)
}

func renderSafeLink(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*safeLink)
	if !entering {
		_, _ = w.WriteString("</a>")
		return ast.WalkContinue, nil
	}
	_, _ = w.WriteString(`<a href="`)
	_, _ = w.WriteString(html.EscapeString(n.href))
	_ = w.WriteByte('"')
	writeTitle(w, n.title)
	if n.external {
		_, _ = w.WriteString(` rel="nofollow noopener noreferrer"`)
	}
	_ = w.WriteByte('>')
	return ast.WalkContinue, nil
}

func renderSafeImage(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*safeImage)
	_, _ = w.WriteString(`<img src="`)
	_, _ = w.WriteString(html.EscapeString(n.src))
	_, _ = w.WriteString(`" alt="`)
	_, _ = w.WriteString(html.EscapeString(n.alt))
	_ = w.WriteByte('"')
	writeTitle(w, n.title)
	_, _ = w.WriteString(` loading="lazy">`)
	return ast.WalkSkipChildren, nil
}

// writeTitle writes a title attribute, if there is a title.
func writeTitle(w util.BufWriter, title string) {
	if title != "" {
		_, _ = w.WriteString(` title="`)
		_, _ = w.WriteString(html.EscapeString(title))
		_ = w.WriteByte('"')
	}
}

func renderContentOnly(util.BufWriter, []byte, ast.Node, bool) (ast.WalkStatus, error) {
	return ast.WalkContinue, nil
}

func renderNothing(util.BufWriter, []byte, ast.Node, bool) (ast.WalkStatus, error) {
	return ast.WalkSkipChildren, nil
}

func renderAutoLinkLabel(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		_, _ = w.WriteString(html.EscapeString(string(node.(*ast.AutoLink).Label(source))))
	}
	return ast.WalkSkipChildren, nil
}

// prefixedIDs are goldmark's heading ids with IDPrefix before them.
type prefixedIDs struct{ parser.IDs }

func newPrefixedIDs() parser.IDs { return prefixedIDs{parser.NewContext().IDs()} }

func (p prefixedIDs) Generate(value []byte, kind ast.NodeKind) []byte {
	return append([]byte(IDPrefix), p.IDs.Generate(value, kind)...)
}

func (p prefixedIDs) Put(value []byte) { p.IDs.Put(bytes.TrimPrefix(value, []byte(IDPrefix))) }
