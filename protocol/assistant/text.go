package assistant

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// maxText bounds a module author's free text in an answer (a
// description, a deprecation message, a module call's source): what an
// assistant is handed of one module stays proportionate, however much a
// hostile author wrote.
const maxText = 1024

// authorText is s, a package author's words, as an answer carries it:
// without control characters (terminal escapes, bells) beside newlines
// and tabs, nor bidirectional overrides, and at most maxText bytes, a
// clipped one saying so.
func authorText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || isBidiControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) <= maxText {
		return s
	}
	cut := maxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (clipped from %d bytes: the catalogue page shows it whole)", len(s))
}

// isBidiControl reports whether r reorders the text around it (the
// embeddings, overrides and isolates of Unicode's bidirectional
// algorithm).
func isBidiControl(r rune) bool {
	return r >= '\u202a' && r <= '\u202e' || r >= '\u2066' && r <= '\u2069'
}

// authorTexts are ss, each as authorText makes it.
func authorTexts(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, authorText(s))
	}
	return out
}

// requirements are a module's provider requirements, their source and
// constraints as written being the author's text.
func requirements(in []moduledoc.ProviderRequirement) []moduledoc.ProviderRequirement {
	out := make([]moduledoc.ProviderRequirement, 0, len(in))
	for _, r := range in {
		r.Source = authorText(r.Source)
		if r.VersionConstraints != nil {
			r.VersionConstraints = authorTexts(r.VersionConstraints)
		}
		out = append(out, r)
	}
	return out
}

// hits are a search's hits, their text (a description's first line,
// clipped by the catalogue) being the author's.
func hits(in []catalog.Hit) []catalog.Hit {
	out := make([]catalog.Hit, 0, len(in))
	for _, h := range in {
		out = append(out, catalog.Hit{Where: h.Where, Text: authorText(h.Text)})
	}
	return out
}
