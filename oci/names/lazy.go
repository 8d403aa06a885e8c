package names

import (
	"regexp"
	"sync"
)

// lazyRegexp is expr compiled on first use, not when a program importing
// the package starts: the bounded repetitions of the package's grammars
// ({0,127}, {1,255}) compile to large programs, milliseconds of every
// CLI command's start.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
