package readme

import (
	"bytes"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Bounds that keep a hostile README's rendering linear in its size:
// goldmark alone takes seconds to minutes on some 512 KiB inputs (100,000
// nested blockquotes or lists, thousands of unclosed "[a](", a table
// header of 100,000 columns padding every short row).
const (
	// MaxNesting is the deepest blockquotes and lists go; a deeper marker
	// is text.
	MaxNesting = 32
	// MaxInlineNesting is the deepest inline elements (emphasis, links)
	// go in a block; deeper ones are replaced by their content.
	MaxInlineNesting = 64
	// MaxFailedTries is how many "]" that close no link, and "<" that
	// open no raw HTML, a block may have before the rest of its "]" and
	// "<" are read as text: each failed try may scan to the block's end.
	MaxFailedTries = 100
	// MaxTableCells is how many cells all the tables of a README may
	// have (columns of the delimiter row times lines); a table past it
	// stays a paragraph.
	MaxTableCells = 1 << 18
)

// blockParsers are goldmark's, with blockquotes and lists opened no
// deeper than MaxNesting.
func blockParsers() []util.PrioritizedValue {
	ps := parser.DefaultBlockParsers()
	for i, p := range ps {
		// The list item parser opens items only inside a list.
		if bp := p.Value.(parser.BlockParser); bp == parser.NewBlockquoteParser() || bp == parser.NewListParser() {
			ps[i].Value = depthCapped{bp}
		}
	}
	return ps
}

// depthCapped opens its block only under fewer than MaxNesting
// blockquotes and lists.
type depthCapped struct{ parser.BlockParser }

func (d depthCapped) Open(parent ast.Node, reader text.Reader, pc parser.Context) (ast.Node, parser.State) {
	if containerDepth(parent) >= MaxNesting {
		return nil, parser.NoChildren
	}
	return d.BlockParser.Open(parent, reader, pc)
}

// containerDepth is the number of blockquotes and lists n is in (n
// included).
func containerDepth(n ast.Node) int {
	depth := 0
	for ; n != nil; n = n.Parent() {
		if k := n.Kind(); k == ast.KindBlockquote || k == ast.KindList {
			depth++
		}
	}
	return depth
}

// inlineParsers are goldmark's, with the link and raw HTML parsers
// bounded by MaxFailedTries per block.
func inlineParsers() []util.PrioritizedValue {
	ps := parser.DefaultInlineParsers()
	for i, p := range ps {
		switch ip := p.Value.(parser.InlineParser); ip {
		case parser.NewLinkParser(): // triggered by "!", "[" and "]"; only "]" scans ahead
			ps[i].Value = &boundedTries{InlineParser: ip, only: ']', key: parser.NewContextKey()}
		case parser.NewRawHTMLParser():
			ps[i].Value = &boundedTries{InlineParser: ip, key: parser.NewContextKey()}
		}
	}
	return ps
}

// boundedTries lets an inline parser fail MaxFailedTries times in a
// block (on its trigger only, when only is set); then that trigger is
// text for the rest of the block.
type boundedTries struct {
	parser.InlineParser
	only byte
	key  parser.ContextKey
}

// tries counts a block's failed tries.
type tries struct {
	block  ast.Node
	failed int
}

func (b *boundedTries) Parse(parent ast.Node, block text.Reader, pc parser.Context) ast.Node {
	if b.only != 0 && block.Peek() != b.only {
		return b.InlineParser.Parse(parent, block, pc)
	}
	t, _ := pc.Get(b.key).(*tries)
	if t == nil || t.block != parent {
		t = &tries{block: parent}
		pc.Set(b.key, t)
	}
	if t.failed >= MaxFailedTries {
		return nil
	}
	n := b.InlineParser.Parse(parent, block, pc)
	if n == nil {
		t.failed++
	}
	return n
}

// CloseBlock passes the end of a block on to the parser (the link
// parser turns its unclosed brackets into text there).
func (b *boundedTries) CloseBlock(parent ast.Node, block text.Reader, pc parser.Context) {
	if c, ok := b.InlineParser.(parser.CloseBlocker); ok {
		c.CloseBlock(parent, block, pc)
	}
}

// gfm is extension.GFM (linkify, tables, strikethrough, task lists) with
// its tables bounded by MaxTableCells and its escaped pipes in code spans
// undone in linear time.
type gfm struct{}

func (gfm) Extend(m goldmark.Markdown) {
	extension.Linkify.Extend(m)
	extension.Strikethrough.Extend(m)
	extension.TaskList.Extend(m)
	m.Parser().AddOptions(
		parser.WithParagraphTransformers(util.Prioritized(boundedTables{extension.NewTableParagraphTransformer()}, 200)),
		parser.WithASTTransformers(util.Prioritized(escapedPipes{}, 0)),
	)
	m.Renderer().AddOptions(renderer.WithNodeRenderers(util.Prioritized(extension.NewTableHTMLRenderer(
		extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)), 500)))
}

var tableCellsKey = parser.NewContextKey()

// boundedTables makes a paragraph a table only while the README's tables
// have fewer than MaxTableCells cells: goldmark pads every row to the
// header's columns.
type boundedTables struct{ parser.ParagraphTransformer }

func (t boundedTables) Transform(node *ast.Paragraph, reader text.Reader, pc parser.Context) {
	lines := node.Lines()
	if lines.Len() < 2 {
		return
	}
	columns := 0
	for i := 1; i < lines.Len(); i++ {
		seg := lines.At(i)
		columns = max(columns, delimiterCells(seg.Value(reader.Source())))
	}
	if columns == 0 {
		return
	}
	used, _ := pc.Get(tableCellsKey).(int)
	cells := columns * lines.Len()
	if cells > MaxTableCells-used {
		return
	}
	pc.Set(tableCellsKey, used+cells)
	t.ParagraphTransformer.Transform(node, reader, pc)
}

// delimiterCells is at least the number of cells of line if it may be a
// table's delimiter row ("|---|:-:|"), else 0.
func delimiterCells(line []byte) int {
	if bytes.IndexByte(line, '-') < 0 {
		return 0
	}
	for _, c := range line {
		switch c {
		case '|', '-', ':', ' ', '\t', '\r', '\n':
		default:
			return 0
		}
	}
	return bytes.Count(line, []byte{'|'}) + 1
}

// escapedPipes removes the backslash of each "\|" in a code span in a
// table cell, as GitHub does (goldmark's own pass for this is quadratic
// in the number of such cells).
type escapedPipes struct{}

func (escapedPipes) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	src := reader.Source()
	var spans []ast.Node
	walk(doc, func(n ast.Node) bool {
		switch n.Kind() {
		case ast.KindCodeSpan:
			if inTableCell(n) {
				spans = append(spans, n)
			}
			return false
		case east.KindTable, east.KindTableHeader, east.KindTableRow, east.KindTableCell, ast.KindDocument:
			return true
		}
		return n.Type() == ast.TypeBlock // inline content outside code spans has no "\|" to undo
	})
	for _, span := range spans {
		for c := span.FirstChild(); c != nil; {
			next := c.NextSibling()
			if t, ok := c.(*ast.Text); ok {
				splitEscapedPipes(span, t, src)
			}
			c = next
		}
	}
}

// inTableCell tells whether n is in a table cell.
func inTableCell(n ast.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Kind() == east.KindTableCell {
			return true
		}
		if p.Type() == ast.TypeBlock {
			return false
		}
	}
	return false
}

// splitEscapedPipes replaces t by raw text segments without the
// backslash of each "\|" in it.
func splitEscapedPipes(parent ast.Node, t *ast.Text, src []byte) {
	seg := t.Segment
	value := seg.Value(src)
	if !bytes.Contains(value, []byte(`\|`)) {
		return
	}
	prev := ast.Node(t)
	start := seg.Start
	for i := 0; i+1 < len(value); i++ {
		if value[i] == '\\' && value[i+1] == '|' {
			n := ast.NewRawTextSegment(text.NewSegment(start, seg.Start+i))
			parent.InsertAfter(parent, prev, n)
			prev = n
			start = seg.Start + i + 1
			i++
		}
	}
	parent.InsertAfter(parent, prev, ast.NewRawTextSegment(text.NewSegment(start, seg.Stop)))
	parent.RemoveChild(parent, t)
}

// walk visits the tree under root in document order without recursion,
// descending into a node's children when visit returns true.
func walk(root ast.Node, visit func(ast.Node) bool) {
	stack := []ast.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !visit(n) {
			continue
		}
		for c := n.LastChild(); c != nil; c = c.PreviousSibling() {
			stack = append(stack, c)
		}
	}
}
