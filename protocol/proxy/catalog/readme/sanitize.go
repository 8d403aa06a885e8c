package readme

import (
	"regexp"

	"github.com/microcosm-cc/bluemonday"
)

// allowList is the second line of defence: what Render's renderer
// writes, and nothing else, passes through it (the elements, attributes
// and URL schemes docs/catalogue.md lists). It changes nothing in a
// correct rendering; should a bug let something else through, it goes.
var allowList = newAllowList()

func newAllowList() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "pre", "code", "em",
		"strong", "del", "a", "img", "blockquote", "hr", "br", "table", "thead", "tbody", "tr", "th",
		"td", "input")
	p.AllowURLSchemes("http", "https", "mailto")
	p.AllowRelativeURLs(true)
	p.RequireParseableURLs(true)
	p.AllowAttrs("href").OnElements("a")
	p.AllowAttrs("rel").Matching(regexp.MustCompile(`^nofollow noopener noreferrer$`)).OnElements("a")
	p.AllowAttrs("title").OnElements("a", "img")
	p.AllowAttrs("src", "alt").OnElements("img")
	p.AllowAttrs("loading").Matching(regexp.MustCompile(`^lazy$`)).OnElements("img")
	p.AllowAttrs("id").Matching(regexp.MustCompile(`^`+IDPrefix+`[a-z0-9_-]*$`)).OnElements("h1", "h2", "h3", "h4", "h5", "h6")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-\S*$`)).OnElements("code")
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(left|center|right)$`)).OnElements("th", "td")
	p.AllowAttrs("start").Matching(regexp.MustCompile(`^[0-9]+$`)).OnElements("ol")
	p.AllowAttrs("type").Matching(regexp.MustCompile(`^checkbox$`)).OnElements("input")
	p.AllowAttrs("checked", "disabled").Matching(regexp.MustCompile(`^$`)).OnElements("input")
	return p
}
