package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// completionFlag is the flag urfave/cli's shell completion appends last.
const completionFlag = "--generate-bash-completion"

// reorderArgs lets flags follow positional arguments, as users write them
// (`oci-tofu lock ./infra --platform linux_amd64`). urfave/cli v2 stops
// reading flags at a command's first argument, so the flags of the command
// the arguments name are moved before its positional arguments, in their
// order. A flag that takes a value keeps it ("--platform linux_amd64",
// "--platform=linux_amd64"); everything after "--" stays an argument; an
// unknown flag moves alone, for urfave/cli to report. Nothing else changes:
// the completion flag stays last, where urfave/cli looks for it. (urfave/cli
// v2 has no option for this: the standard flag package it parses with
// stops at the first non-flag argument.)
func reorderArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := append([]string(nil), args[0])
	rest := args[1:]
	tail := []string(nil)
	if rest[len(rest)-1] == completionFlag {
		rest, tail = rest[:len(rest)-1], []string{completionFlag}
	}
	// The application's own flags come first; then the command path.
	i := 0
	for i < len(rest) && isFlag(rest[i]) {
		i++
	}
	out = append(out, rest[:i]...)
	subcommand, flags := app.Command, app.Flags
	var leaf *cli.Command
	for i < len(rest) {
		cmd := subcommand(rest[i])
		if cmd == nil {
			break
		}
		out = append(out, rest[i])
		i++
		leaf, subcommand, flags = cmd, cmd.Command, cmd.Flags
		if len(cmd.Subcommands) == 0 {
			break
		}
		// Flags between a parent command and its subcommand stay put.
		for i < len(rest) && isFlag(rest[i]) && subcommand(rest[i]) == nil {
			out = append(out, rest[i])
			i++
		}
	}
	if leaf == nil {
		return append(append(out, rest[i:]...), tail...)
	}
	moved, positional := splitFlags(flags, rest[i:])
	return append(append(append(out, moved...), positional...), tail...)
}

// splitFlags separates a command's flags (with their values) from its
// positional arguments. When "--" is present it is kept, after the flags,
// and every argument follows it, so none is read as a flag.
func splitFlags(flags []cli.Flag, args []string) (moved, positional []string) {
	var dashdash bool
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			dashdash = true
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case isFlag(a):
			moved = append(moved, a)
			if takesValue(flags, a) && !strings.Contains(a, "=") && i+1 < len(args) {
				moved = append(moved, args[i+1])
				i++
			}
		default:
			positional = append(positional, a)
		}
	}
	if dashdash {
		moved = append(moved, "--")
	}
	return moved, positional
}

// isFlag reports whether an argument is written as a flag ("-" alone is an
// argument: standard input, by convention).
func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

// takesValue reports whether the flag an argument names is known and takes
// a value (everything but boolean flags does).
func takesValue(flags []cli.Flag, arg string) bool {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				df, ok := f.(cli.DocGenerationFlag)
				return ok && df.TakesValue()
			}
		}
	}
	return false
}
