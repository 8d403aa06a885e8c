package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// helpWidth is the widest line help may print.
const helpWidth = 100

// defaultFlagString is urfave/cli's own rendering of a flag:
// "NAMES\tUSAGE (default: …) [$ENV]".
var defaultFlagString = cli.FlagStringer

// flagHelp renders a flag for help as its names on one line and its usage
// below, wrapped to helpWidth (urfave/cli v2 puts both on one line and
// aligns every usage after the longest names, which made lines of over 300
// columns). The help template indents the first line by 3 columns and the
// lines after it by 6; the usage gets 2 more.
func flagHelp(f cli.Flag) string {
	names, usage, ok := strings.Cut(defaultFlagString(f), "\t")
	if !ok || strings.TrimSpace(usage) == "" {
		return names
	}
	return names + "\n" + wrapWords(usage, helpWidth-8, "  ")
}

// wrapWords breaks s into lines of at most width columns (a word longer
// than width stands alone), each prefixed by indent.
func wrapWords(s string, width int, indent string) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, indent+line)
			line = ""
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
