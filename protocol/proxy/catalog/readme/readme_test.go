package readme

import (
	"bytes"
	"html"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// testOptions: a README in modules/vpc of a package whose catalogue has
// pages for modules/x, examples/y and the root, and serves files under
// /files/.
var testOptions = Options{
	Dir: "modules/vpc",
	Link: func(p string) string {
		switch p {
		case "modules/x", "examples/y", "":
			return "/catalog/pkg/" + p
		}
		return ""
	},
	Image: func(p string) string {
		if strings.HasSuffix(p, ".png") {
			return "/files/pkg/" + p
		}
		return ""
	},
}

func ours(u string) bool {
	return strings.HasPrefix(u, "/catalog/pkg/") || strings.HasPrefix(u, "/files/pkg/")
}

// mustRender renders in and fails the test on any breach of the
// allow-list.
func mustRender(t *testing.T, in string, o Options) string {
	t.Helper()
	out := string(Render([]byte(in), o))
	if bad := checkSafe(out, ours, ours); len(bad) > 0 {
		t.Errorf("Render(%.200q) = %.2000s\nbreaches: %q", in, out, bad)
	}
	return out
}

func TestRenderHostile(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // in the output
		absent   []string // not in the output (case-insensitive)
	}{
		{"script block", "<script>alert(1)</script>\n\ntext", []string{"<p>text</p>"}, []string{"script", "alert"}},
		{"inline script", "a <script>alert(1)</script> b", []string{"<p>a alert(1) b</p>"}, []string{"<script"}},
		{"iframe", `<iframe src="https://evil"></iframe>`, nil, []string{"iframe", "evil"}},
		{"img onerror", `x <img src=x onerror="alert(1)"> y`, []string{"<p>x  y</p>"}, []string{"onerror", "<img"}},
		{"svg onload", `<svg onload=alert(1)>` + "\n\n" + `a <svg/onload=alert(1)> b`, []string{"a &lt;svg/onload=alert(1)&gt; b"}, []string{"<svg"}},
		{"style", "<style>body{display:none}</style>\n\na <style>x</style>", nil, []string{"<style", "style="}},
		{"html comment", "a <!-- x --> b\n\n<!--\nx\n-->", nil, []string{"<!--"}},
		{"raw anchor", `<a href="javascript:alert(1)">x</a>`, nil, []string{"javascript", "href"}},
		{"javascript link", `[x](javascript:alert(1))`, []string{"<p>x</p>"}, []string{"href", "javascript"}},
		{"mixed case", `[x](JaVaScRiPt:alert(1))`, []string{"<p>x</p>"}, []string{"href"}},
		{"tab inside", "[x](<java\tscript:alert(1)>) [y](java\tscript:alert(1))", []string{"<p>x [y](java\tscript:alert(1))</p>"}, []string{"href"}},
		{"tab entity", `[x](java&#x09;script:alert(1))`, []string{"<p>x</p>"}, []string{"href"}},
		{"named tab entity", `[x](java&Tab;script:alert(1))`, []string{"<p>x</p>"}, []string{"href"}},
		{"newline entity", `[x](java&NewLine;script:alert(1))`, []string{"<p>x</p>"}, []string{"href"}},
		{"decimal entity", `[x](&#106;avascript:alert(1))`, []string{"<p>x</p>"}, []string{"href"}},
		{"hex entity", `[x](&#x6A;avascript:alert(1))`, []string{"<p>x</p>"}, []string{"href"}},
		{"colon entity", `[x](javascript&colon;alert(1))`, []string{"<p>x</p>"}, []string{"href"}},
		{"leading control", "[x](\x01javascript:alert(1))", []string{"x"}, []string{"href"}},
		{"leading space in angle", `[x](< javascript:alert(1)>)`, []string{"<p>x</p>"}, []string{"href"}},
		{"escaped colon", `[x](javascript\:alert(1))`, []string{"<p>x</p>"}, []string{"href"}},
		{"vbscript", `[x](vbscript:msgbox(1))`, []string{"<p>x</p>"}, []string{"href"}},
		{"data link", `[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)`, []string{"<p>x</p>"}, []string{"href", "data:"}},
		{"file link", `[x](file:///etc/passwd)`, []string{"<p>x</p>"}, []string{"href"}},
		{"blob link", `[x](blob:https://x/1)`, []string{"<p>x</p>"}, []string{"href"}},
		{"custom scheme", `[x](ssh://host) [y](vscode:open)`, []string{"<p>x y</p>"}, []string{"href"}},
		{"reference to javascript", "[x][r] and [r]\n\n[r]: javascript:alert(1) \"t\"", []string{"<p>x and r</p>"}, []string{"href", "javascript"}},
		{"reference entity", "[x][r]\n\n[r]: &#106;avascript:alert(1)", []string{"<p>x</p>"}, []string{"href"}},
		{"autolink javascript", `<javascript:alert(1)>`, []string{"<p>javascript:alert(1)</p>"}, []string{"href"}},
		{"autolink data", `<data:text/html,x>`, nil, []string{"href"}},
		{"autolink http", `<https://example.com/a?b=1&c=2>`, []string{`<a href="https://example.com/a?b=1&amp;c=2" rel="nofollow noopener noreferrer">`}, nil},
		{"autolink mail", `<a@example.com>`, []string{`<a href="mailto:a@example.com">a@example.com</a>`}, nil},
		{"linkify", `see www.example.com and https://example.org/x.`, []string{`<a href="http://www.example.com" rel="nofollow noopener noreferrer">www.example.com</a>`, `<a href="https://example.org/x" rel="nofollow noopener noreferrer">`}, nil},
		{"linkify ftp", `ftp://example.com/x`, []string{"ftp://example.com/x"}, []string{"href"}},
		{"http link", `[x](https://example.com/a "T")`, []string{`<a href="https://example.com/a" title="T" rel="nofollow noopener noreferrer">x</a>`}, []string{"target"}},
		{"http without host", `[x](http:evil.com) [y](https:/evil)`, []string{"<p>x y</p>"}, []string{"href"}},
		{"title quotes", `[x](https://e.com "a&quot; onmouseover=&quot;alert(1)")`, []string{`title="a&#34; onmouseover=&#34;alert(1)"`}, []string{`" onmouseover`}},
		{"mailto", `[m](mailto:a@example.com?subject=hi)`, []string{`<a href="mailto:a@example.com?subject=hi">m</a>`}, nil},
		{"external image", `![logo](https://evil.example/track.png)`, []string{`<a href="https://evil.example/track.png" rel="nofollow noopener noreferrer">image: logo</a>`}, []string{"<img"}},
		{"external image no alt", `![](https://evil.example/t.png)`, []string{`>image: https://evil.example/t.png</a>`}, []string{"<img"}},
		{"protocol-relative image", `![x](//evil.example/t.png)`, []string{`<img src="/files/pkg/evil.example/t.png"`}, []string{`src="//`}},
		{"image in link", `[![CI](https://ci.example/badge.svg)](https://ci.example/)`, []string{`<a href="https://ci.example/" rel="nofollow noopener noreferrer">image: CI</a>`}, []string{"<img", "badge.svg"}},
		{"data image", `![pixel](data:image/png;base64,iVBORw0KGgo=)`, []string{"<p>image: pixel</p>"}, []string{"<img", "data:"}},
		{"javascript image", `![x](javascript:alert(1))`, []string{"<p>image: x</p>"}, []string{"<img", "javascript"}},
		{"package image", `![diagram](docs/d.png "D")`, []string{`<img src="/files/pkg/modules/vpc/docs/d.png" alt="diagram" title="D" loading="lazy">`}, nil},
		{"package image unserved", `![code](main.tf)`, []string{"<p>image: code (modules/vpc/main.tf)</p>"}, []string{"<img"}},
		{"image outside", `![x](../../../etc/passwd.png)`, []string{"<p>image: x</p>"}, []string{"<img", "passwd"}},
		{"image alt markup", `![a *b* <i>c</i> &amp; "d"](x.png)`, []string{`alt="a b c &amp; &#34;d&#34;"`}, []string{"<i>"}},
		{"huge image", "![" + strings.Repeat("a", 500) + "](data:image/png;base64," + strings.Repeat("A", 300000) + ")", []string{"image: aaaa"}, []string{"<img", "base64"}},
		{"passwd", `[p](../../etc/passwd) [q](../../../../etc/passwd) [r](/../../etc/passwd)`, []string{"<p>p q r</p>"}, []string{"href", "passwd"}},
		{"encoded escape", `[p](%2e%2e/%2e%2e/%2e%2e/x) [q](..%2f..%2f..%2fx) [r](..\..\..\x)`, []string{"<p>p q r</p>"}, []string{"href"}},
		{"submodule", `[x](../x) [x2](../x/) [y](../../examples/y/README.md#usage) [root](../..) [abs](/modules/x)`, []string{`<a href="/catalog/pkg/modules/x">x</a>`, `<a href="/catalog/pkg/modules/x">x2</a>`, `<a href="/catalog/pkg/">root</a>`, `<a href="/catalog/pkg/modules/x">abs</a>`}, nil},
		{"no page", `[main](main.tf) [y](../../examples/y/README.md)`, []string{"<p>main y</p>"}, []string{"href"}},
		{"fragment", "# Usage notes\n\n[see](#usage-notes) [q](?x#a)", []string{`<h1 id="readme-usage-notes">`, `<a href="#readme-usage-notes">see</a>`, `<a href="#readme-a">q</a>`}, nil},
		{"fragment quotes", `[x](#a"onmouseover=alert(1))`, []string{`href="#readme-a%22onmouseover=alert(1)"`}, []string{`"onmouseover`}},
		{"empty link", `[x]() [y](#)`, []string{"<p>x y</p>"}, []string{"href"}},
		{"heading ids", "# A\n## A\n### <b>x</b>\n#### !!!", []string{`id="readme-a"`, `id="readme-a-1"`, `id="readme-bxb"`, `id="readme-heading"`}, nil},
		{"code info", "```go\" onclick=\"x\nfmt\n```", []string{`<code class="language-go&#34;">`}, []string{`" onclick`}},
		{"table", "| a | b |\n|:-:|---|\n| 1 | `x\\|y` |\n| 2 |\n", []string{`<th align="center">a</th>`, "<td><code>x|y</code></td>", "<td></td>"}, []string{"style"}},
		{"task list", "- [x] done\n- [ ] todo", []string{`<li><input checked="" disabled="" type="checkbox"> done</li>`, `<li><input disabled="" type="checkbox"> todo</li>`}, nil},
		{"strikethrough", "~~old~~", []string{"<del>old</del>"}, nil},
		{"nested link", `[a [b](https://b.example) c](https://a.example)`, []string{`<p>[a <a href="https://b.example" rel="nofollow noopener noreferrer">b</a> c](`}, nil},
		{"link in image alt", `![x [y](javascript:1)](p.png)`, []string{`alt="x y"`}, []string{"javascript"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mustRender(t, tc.in, testOptions)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%.3000s", w, out)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(strings.ToLower(out), strings.ToLower(a)) {
					t.Errorf("output has %q:\n%.3000s", a, out)
				}
			}
		})
	}
}

// With neither Link nor Image, links inside the package are text and
// images their alt text with the path.
func TestRenderNoLinkNorImage(t *testing.T) {
	out := mustRender(t, "[x](modules/x) ![d](d.png) [f](#f)", Options{})
	if want := `<p>x image: d (d.png) <a href="#readme-f">f</a></p>`; !strings.Contains(out, want) {
		t.Errorf("got %s, want %s", out, want)
	}
}

// A Link or Image that returns an unsafe URL is not used.
func TestRenderDistrustsOptions(t *testing.T) {
	bad := func(string) string { return "javascript:alert(1)" }
	out := mustRender(t, "[x](a) ![i](b.png)", Options{Link: bad, Image: bad})
	if strings.Contains(out, "javascript") || !strings.Contains(out, "<p>x image: i (b.png)</p>") {
		t.Errorf("got %s", out)
	}
}

func TestRenderCutsAtMaxSize(t *testing.T) {
	in := strings.Repeat("é", MaxSize/2) + "tail" // 2-byte runes: the cut falls inside one
	out := string(Render([]byte("x"+in), Options{}))
	if !strings.HasSuffix(out, "<p><em>(README cut at 512 KiB)</em></p>\n") || strings.Contains(out, "tail") || !utf8.ValidString(out) {
		t.Errorf("cut output ends %q", out[max(0, len(out)-100):])
	}
	if out := string(Render([]byte(strings.Repeat("a", MaxSize)), Options{})); strings.Contains(out, "cut") {
		t.Errorf("a README of exactly MaxSize is cut")
	}
}

// Hostile nesting and quadratic traps of 100,000 levels or 512 KiB stay
// bounded: nesting is capped, and each renders in seconds at most (goldmark
// alone takes from 5 seconds to minutes on them).
func TestRenderBoundsHostileInput(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		tag      string // whose nesting is capped
		max      int
	}{
		{"blockquotes", strings.Repeat(">", 100000) + " x\n", "<blockquote>", MaxNesting},
		{"blockquote lines", strings.Repeat(strings.Repeat("> ", 1000)+"x\n", 200), "<blockquote>", MaxNesting},
		{"lists", strings.Repeat("- ", 100000) + "x\n", "<ul>", MaxNesting},
		{"quoted lists", strings.Repeat("> - ", 100000) + "x\n", "<blockquote>", MaxNesting},
		{"indented lists", indentedList(700), "<ul>", MaxNesting},
		{"brackets", strings.Repeat("[", 10000) + "x" + strings.Repeat("]", 10000), "", 0},
		{"bracket links", strings.Repeat("[", 10000) + "x" + strings.Repeat("](u)", 10000), "<a ", 1},
		{"image nesting", strings.Repeat("![a ", 50000) + strings.Repeat("](u.png)", 50000), "", 0},
		{"emphasis", strings.Repeat("*", 100000) + "a" + strings.Repeat("*", 100000), "<em>", MaxInlineNesting},
		{"strikethrough", strings.Repeat("~~a ", 60000) + strings.Repeat(" a~~", 60000), "<del>", MaxInlineNesting},
		{"unclosed links", strings.Repeat("[a](", 130000), "", 0},
		{"unclosed link lines", strings.Repeat("[a](\n", 100000), "", 0},
		{"unclosed titles", strings.Repeat("[a](b \"\n", 65000), "", 0},
		{"unclosed attributes", strings.Repeat("<a b=\"\n", 70000), "", 0},
		{"wide table", "|" + strings.Repeat("a|", 100000) + "\n|" + strings.Repeat("-|", 100000) + "\n" + strings.Repeat("|x\n", 30000), "", 0},
		{"escaped pipes", "|a|b|\n|-|-|\n" + strings.Repeat("|`\\|`|`\\|`|\n", 40000), "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			out := mustRender(t, tc.in, testOptions)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("%d bytes took %v", len(tc.in), d)
			}
			if len(out) > 40*MaxSize {
				t.Errorf("%d bytes rendered as %d", len(tc.in), len(out))
			}
			if tc.tag != "" {
				if depth := maxDepth(out, tc.tag); depth > tc.max {
					t.Errorf("%s nested %d deep, want at most %d", tc.tag, depth, tc.max)
				}
			}
		})
	}
}

func indentedList(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat("  ", i))
		b.WriteString("* foo\n")
	}
	return b.String()
}

// maxDepth is how deep elements opened by open ("<ul>") nest in out.
func maxDepth(out, open string) int {
	name := strings.Trim(open, "<> ")
	depth, deepest := 0, 0
	for i := 0; i < len(out); i++ {
		switch {
		case strings.HasPrefix(out[i:], "<"+name+">") || strings.HasPrefix(out[i:], "<"+name+" "):
			depth++
			deepest = max(deepest, depth)
		case strings.HasPrefix(out[i:], "</"+name+">"):
			depth--
		}
	}
	return deepest
}

// The allow-list removes what the renderer must never write...
func TestAllowListRemovesTheRest(t *testing.T) {
	in := `<p onclick="x" style="color:red">a<script>alert(1)</script><iframe src="https://e"></iframe>` +
		`<a href="javascript:alert(1)">j</a><a href="https://e" target="_blank" rel="opener">h</a>` +
		`<img src="https://e/x.png" onerror="x" width="1"><input type="text"><svg onload="x"></svg>` +
		`<h1 id="main">t</h1><td align="justify">c</td><!-- c --></p>`
	out := allowList.Sanitize(in)
	for _, gone := range []string{"onclick", "style", "script", "alert", "iframe", "javascript", "target", "opener", "onerror", "width", "text", "svg", `id="main"`, "justify", "<!--"} {
		if strings.Contains(out, gone) {
			t.Errorf("allow-listed %s: %q left", out, gone)
		}
	}
}

// ...and changes nothing else.
func TestAllowListKeepsTheRendering(t *testing.T) {
	var raw bytes.Buffer
	o := testOptions
	render(&raw, []byte(sampleREADME+"1. a\n\n3. b\n"), &o)
	if got, want := html.UnescapeString(allowList.Sanitize(raw.String())), html.UnescapeString(raw.String()); got != want {
		t.Errorf("allow-list changed the rendering:\n%s\nwant\n%s", got, want)
	}
}
