package names

import (
	"regexp"
	"sync"
)

// tagGrammar is the OCI distribution spec's tag grammar.
var tagGrammar = lazyRegexp(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)

// ValidTag reports whether tag is a tag the OCI distribution spec allows:
// up to 128 letters, digits, '_', '.' and '-', not starting with '.' or
// '-'. TagForVersion's tags are, for versions of up to 128 bytes.
func ValidTag(tag string) bool { return tagGrammar().MatchString(tag) }

// lazyRegexp is expr compiled on first use, not when a program importing
// the package starts: the bounded repetitions of the package's grammars
// ({0,127}, {1,255}) compile to large programs, milliseconds of every
// CLI command's start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
