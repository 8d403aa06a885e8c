package report

import (
	"fmt"
	"strings"
)

// WrapWords breaks s into lines of at most width columns (a word longer
// than width stands alone), each prefixed by indent.
func WrapWords(s string, width int, indent string) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines, line = append(lines, indent+line), ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, indent+line)
	}
	return strings.Join(lines, "\n")
}

// Quoted is args each quoted as Go quotes strings, space-separated: the
// arguments a usage error names, unambiguous whatever they hold.
func Quoted(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, " ")
}
