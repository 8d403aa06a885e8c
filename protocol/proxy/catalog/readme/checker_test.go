package readme

import (
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Allowed elements and attributes of Render's output.
var (
	allowedElements = set("p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "pre", "code",
		"em", "strong", "del", "a", "img", "blockquote", "hr", "br", "table", "thead", "tbody", "tr",
		"th", "td", "input")
	allowedAttributes = set("href", "src", "alt", "title", "id", "rel", "loading", "class", "align",
		"type", "checked", "disabled", "start")
)

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// checkSafe parses out as a browser would (in a <div>) and returns every
// breach of the allow-list: an element or attribute outside it, an
// input other than a disabled checkbox, an on* or style attribute, an
// href or src whose scheme is not http, https or mailto, or a relative
// one that neither links nor images made (a nil one allows none).
func checkSafe(out string, links, images func(string) bool) []string {
	ctx := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(strings.NewReader(out), ctx)
	if err != nil {
		return []string{"does not parse: " + err.Error()}
	}
	var bad []string
	var visit func(*html.Node)
	visit = func(n *html.Node) {
		switch n.Type {
		case html.ElementNode:
			bad = append(bad, checkElement(n, links, images)...)
		case html.CommentNode, html.DoctypeNode:
			bad = append(bad, fmt.Sprintf("a %v node %q", n.Type, n.Data))
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			visit(c)
		}
	}
	for _, n := range nodes {
		visit(n)
	}
	return bad
}

func checkElement(n *html.Node, links, images func(string) bool) []string {
	var bad []string
	if !allowedElements[n.Data] {
		bad = append(bad, "element <"+n.Data+">")
	}
	attrs := map[string]string{}
	for _, a := range n.Attr {
		attrs[a.Key] = a.Val
		switch {
		case a.Namespace != "" || !allowedAttributes[a.Key] || strings.HasPrefix(a.Key, "on") || a.Key == "style":
			bad = append(bad, fmt.Sprintf("attribute %s=%q on <%s>", a.Key, a.Val, n.Data))
		case a.Key == "href" && !allowedURL(a.Val, true, links):
			bad = append(bad, fmt.Sprintf("href %q", a.Val))
		case a.Key == "src" && (n.Data != "img" || !allowedURL(a.Val, false, images)):
			bad = append(bad, fmt.Sprintf("src %q on <%s>", a.Val, n.Data))
		}
	}
	if n.Data == "input" && (attrs["type"] != "checkbox" || !hasKey(n, "disabled")) {
		bad = append(bad, fmt.Sprintf("input %v", n.Attr))
	}
	if n.Data == "img" && (attrs["loading"] != "lazy" || attrs["src"] == "") {
		bad = append(bad, fmt.Sprintf("img %v", n.Attr))
	}
	if n.Data == "a" && strings.HasPrefix(attrs["href"], "http") && attrs["rel"] != "nofollow noopener noreferrer" {
		bad = append(bad, fmt.Sprintf("external link without rel: %v", n.Attr))
	}
	return bad
}

func hasKey(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

// allowedURL: http(s) (links only: images never load from elsewhere),
// mailto (links only), a fragment "#readme-..." (links only), or one
// that ours made.
func allowedURL(u string, link bool, ours func(string) bool) bool {
	if ours != nil && ours(u) {
		return true
	}
	if !link {
		return false
	}
	if strings.HasPrefix(u, "#"+IDPrefix) {
		return true
	}
	parsed, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch parsed.Scheme {
	case "http", "https":
		return parsed.Host != ""
	case "mailto":
		return true
	}
	return false
}
