package readme

import (
	"bytes"
	"net/url"
	"path"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// optionsKey holds a call's *Options in its parser.Context.
var optionsKey = parser.NewContextKey()

// rewriter is the AST transformer that makes the tree safe to render:
// raw HTML removed, every link, autolink and image replaced by a
// safeLink, a safeImage or text, inline elements nested deeper than
// MaxInlineNesting replaced by their content, and no attribute left but
// headings' ids.
type rewriter struct{}

func (*rewriter) Transform(doc *ast.Document, reader text.Reader, pc parser.Context) {
	o, _ := pc.Get(optionsKey).(*Options)
	if o == nil {
		o = &Options{}
	}
	r := rewrite{src: reader.Source(), o: o}
	for _, n := range flattened(doc) {
		r.node(n)
	}
}

// flattened lists the nodes of doc in document order, after replacing
// inline elements deeper than MaxInlineNesting by their children.
func flattened(doc ast.Node) []ast.Node {
	type entry struct {
		n      ast.Node
		inline int // depth among inline nodes
	}
	var nodes []ast.Node
	stack := []entry{{doc, 0}}
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n, depth := e.n, e.inline
		if n.Type() == ast.TypeInline {
			depth++
		}
		if depth > MaxInlineNesting && n.HasChildren() && n.Parent() != nil {
			children := unwrap(n)
			for i := len(children) - 1; i >= 0; i-- {
				stack = append(stack, entry{children[i], e.inline})
			}
			continue
		}
		nodes = append(nodes, n)
		for c := n.LastChild(); c != nil; c = c.PreviousSibling() {
			stack = append(stack, entry{c, depth})
		}
	}
	return nodes
}

// rewrite is one call's rewriting.
type rewrite struct {
	src []byte
	o   *Options
}

func (r *rewrite) node(n ast.Node) {
	if n.Parent() == nil && n.Kind() != ast.KindDocument {
		return // in a subtree already replaced
	}
	scrubAttributes(n)
	switch n := n.(type) {
	case *ast.RawHTML:
		n.Parent().RemoveChild(n.Parent(), n)
	case *ast.HTMLBlock:
		n.Parent().RemoveChild(n.Parent(), n)
	case *ast.Link:
		r.link(n)
	case *ast.AutoLink:
		r.autoLink(n)
	case *ast.Image:
		r.image(n)
	}
}

// scrubAttributes leaves no attribute on n but a heading's id (the
// parser sets no other; this keeps it so).
func scrubAttributes(n ast.Node) {
	if n.Attributes() == nil {
		return
	}
	id, ok := n.AttributeString("id")
	n.RemoveAttributes()
	if b, isBytes := id.([]byte); ok && isBytes && n.Kind() == ast.KindHeading {
		n.SetAttributeString("id", b)
	}
}

func (r *rewrite) link(n *ast.Link) {
	t, ok := r.linkTarget(string(resolved(n.Destination)))
	if !ok || insideLink(n) {
		unwrap(n)
		return
	}
	l := &safeLink{href: t.href, title: string(resolved(n.Title)), external: t.external}
	replaceKeepingChildren(n, l)
}

func (r *rewrite) autoLink(n *ast.AutoLink) {
	u := string(n.URL(r.src))
	if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(u), "mailto:") {
		u = "mailto:" + u
	}
	label := textNode(string(n.Label(r.src)))
	t, ok := r.linkTarget(u)
	if !ok || insideLink(n) {
		n.Parent().ReplaceChild(n.Parent(), n, label)
		return
	}
	l := &safeLink{href: t.href, external: t.external}
	l.AppendChild(l, label)
	n.Parent().ReplaceChild(n.Parent(), n, l)
}

func (r *rewrite) image(n *ast.Image) {
	alt := plainText(n, r.src)
	title := string(resolved(n.Title))
	dest := stripURL(string(resolved(n.Destination)))
	var repl ast.Node
	switch scheme := schemeOf(dest); scheme {
	case "http", "https":
		href, ok := absoluteURL(dest)
		switch {
		case !ok:
			repl = imageText(alt, "", "")
		case insideLink(n):
			repl = imageText(alt, "", "")
		default:
			l := &safeLink{href: href, title: title, external: true}
			l.AppendChild(l, imageText(alt, "", href))
			repl = l
		}
	case "":
		p, _, where := resolve(r.o.Dir, dest)
		switch {
		case where != inPackage:
			repl = imageText(alt, "", "")
		case r.o.Image != nil && safeImageURL(r.o.Image(p)):
			repl = &safeImage{src: r.o.Image(p), alt: alt, title: title}
		default:
			repl = imageText(alt, p, "")
		}
	default: // data:, javascript:, ...
		repl = imageText(alt, "", "")
	}
	if repl == nil {
		n.Parent().RemoveChild(n.Parent(), n)
		return
	}
	n.Parent().ReplaceChild(n.Parent(), n, repl)
}

// imageText is what an image not shown reads as: "image: ALT (path)"
// for one in the package, "image: ALT" for others (the URL when there is
// no ALT), or nil when there is nothing to say.
func imageText(alt, pkgPath, url string) ast.Node {
	switch {
	case alt != "" && pkgPath != "":
		return textNode("image: " + alt + " (" + pkgPath + ")")
	case alt != "":
		return textNode("image: " + alt)
	case pkgPath != "":
		return textNode("image: " + pkgPath)
	case url != "":
		return textNode("image: " + url)
	}
	return nil
}

// target is where a kept link goes.
type target struct {
	href     string
	external bool
}

// linkTarget is where a link to dest (entities and escapes resolved)
// goes, or false when it is dropped.
func (r *rewrite) linkTarget(dest string) (target, bool) {
	dest = stripURL(dest)
	switch schemeOf(dest) {
	case "http", "https":
		href, ok := absoluteURL(dest)
		return target{href: href, external: true}, ok
	case "mailto":
		u, err := url.Parse(dest)
		if err != nil {
			return target{}, false
		}
		return target{href: u.String()}, true
	case "":
		p, frag, where := resolve(r.o.Dir, dest)
		switch where {
		case fragmentOnly:
			if frag == "" {
				return target{}, false
			}
			return target{href: (&url.URL{Fragment: IDPrefix + frag}).String()}, true
		case inPackage:
			if r.o.Link == nil {
				return target{}, false
			}
			href := r.o.Link(p)
			return target{href: href}, safeLinkURL(href)
		}
	}
	return target{}, false
}

// Where a relative URL leads.
const (
	outside      = iota // out of the package
	fragmentOnly        // "#section": this README
	inPackage           // a path in the package
)

// resolve resolves a relative URL against dir: the package path it
// names ("" for the root) and its fragment, both unescaped.
func resolve(dir, ref string) (p, frag string, where int) {
	ref = strings.ReplaceAll(ref, `\`, "/") // as browsers read it
	if i := strings.IndexByte(ref, '#'); i >= 0 {
		ref, frag = ref[:i], unescape(ref[i+1:])
	}
	if i := strings.IndexByte(ref, '?'); i >= 0 {
		ref = ref[:i]
	}
	if ref == "" {
		return "", frag, fragmentOnly
	}
	ref = strings.ReplaceAll(unescape(ref), `\`, "/")
	if strings.HasPrefix(ref, "/") { // from the package root, as GitHub reads it from the repository's
		dir = ""
		ref = strings.TrimLeft(ref, "/")
	}
	p = path.Join(dir, ref)
	switch {
	case p == "..", strings.HasPrefix(p, "../"), strings.HasPrefix(p, "/"):
		return "", "", outside
	case p == ".":
		p = ""
	}
	return p, frag, inPackage
}

// unescape is s with its %XX escapes decoded, or s if it has a bad one.
func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// stripURL is u as a browser reads it: leading and trailing C0 controls
// and spaces removed, and tabs and newlines anywhere ("java\tscript:").
func stripURL(u string) string {
	u = strings.TrimFunc(u, func(r rune) bool { return r <= ' ' })
	if strings.ContainsAny(u, "\t\n\r") {
		u = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, u)
	}
	return u
}

// schemeOf is u's scheme in lower case, or "" for a relative URL: a
// scheme is a letter, then letters, digits, "+", "-" or ".", then ":".
func schemeOf(u string) string {
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return strings.ToLower(u[:i])
		default:
			return ""
		}
	}
	return ""
}

// absoluteURL is an http or https URL with a host, re-encoded, or false.
func absoluteURL(u string) (string, bool) {
	parsed, err := url.Parse(u)
	if err != nil || parsed.Host == "" || (parsed.Scheme != "http" && parsed.Scheme != "https") {
		return "", false
	}
	return parsed.String(), true
}

// safeLinkURL tells whether a URL from Options.Link may be an href:
// http, https, mailto or relative, with nothing a browser strips.
func safeLinkURL(u string) bool {
	if u == "" || stripURL(u) != u {
		return false
	}
	switch schemeOf(u) {
	case "", "http", "https", "mailto":
		return true
	}
	return false
}

// safeImageURL tells whether a URL from Options.Image may be an img src:
// http, https or relative.
func safeImageURL(u string) bool {
	return safeLinkURL(u) && schemeOf(u) != "mailto"
}

// resolved is a destination or title as goldmark's renderer reads it:
// backslash escapes and character references resolved.
func resolved(v []byte) []byte {
	v = util.UnescapePunctuations(v)
	v = util.ResolveNumericReferences(v)
	return util.ResolveEntityNames(v)
}

// plainText is the text of n's descendants (an image's alt text).
func plainText(n ast.Node, src []byte) string {
	var b bytes.Buffer
	walk(n, func(c ast.Node) bool {
		switch c := c.(type) {
		case *ast.Text:
			v := c.Segment.Value(src)
			if !c.IsRaw() {
				v = resolved(v)
			}
			b.Write(v)
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.AutoLink:
			b.Write(c.Label(src))
		case *ast.RawHTML:
			return false
		}
		return true
	})
	return strings.TrimSpace(b.String())
}

// textNode is s as text, written escaped and nothing else.
func textNode(s string) ast.Node {
	t := ast.NewString([]byte(s))
	t.SetRaw(true)
	return t
}

// insideLink tells whether n is inside a kept link.
func insideLink(n ast.Node) bool {
	for p := n.Parent(); p != nil; p = p.Parent() {
		if p.Kind() == kindSafeLink {
			return true
		}
	}
	return false
}

// unwrap replaces n by its children and returns them.
func unwrap(n ast.Node) []ast.Node {
	parent := n.Parent()
	var children []ast.Node
	for c := n.FirstChild(); c != nil; {
		next := c.NextSibling()
		n.RemoveChild(n, c)
		parent.InsertBefore(parent, n, c)
		children = append(children, c)
		c = next
	}
	parent.RemoveChild(parent, n)
	return children
}

// replaceKeepingChildren puts with in n's place, n's children moved into
// it.
func replaceKeepingChildren(n, with ast.Node) {
	for c := n.FirstChild(); c != nil; {
		next := c.NextSibling()
		n.RemoveChild(n, c)
		with.AppendChild(with, c)
		c = next
	}
	n.Parent().ReplaceChild(n.Parent(), n, with)
}
