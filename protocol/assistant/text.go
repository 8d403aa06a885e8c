package assistant

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
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
