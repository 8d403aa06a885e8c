package main

// What urfave/cli v2 does not do as oci-tofu needs, and how it is worked
// around, one section each. configureCLI applies them to the application.

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// configureCLI gives every command the same manners: flags anywhere on the
// command line (reorderArgs), help wrapped to helpWidth, bad command lines
// reported with the command's synopsis before any work starts, unknown
// commands answered with the closest one (report.Closest), `version`, and shell completion.
func configureCLI(app *cli.App) {
	cli.FlagStringer = flagHelp
	app.EnableBashCompletion = true
	app.UsageText = app.Name + " COMMAND [flags] [arguments]   (flags may also follow the arguments)"
	app.Commands = append(app.Commands, versionCommand(), completionCommand())
	app.Action = unknownCommandAction(app.Name, func() []*cli.Command { return app.Commands })
	app.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		return flagUsageError(app.Name, &cli.Command{Name: app.Name, Flags: app.Flags, ArgsUsage: "COMMAND [arguments]"}, err)
	}
	configureCommands(app.Name, app.Commands)
}

// configureCommands sets the hooks of every command below parent.
func configureCommands(parent string, cmds []*cli.Command) {
	for _, cmd := range cmds {
		path := parent + " " + cmd.Name
		if len(cmd.Subcommands) > 0 {
			subs := cmd.Subcommands
			cmd.HideHelpCommand = true
			cmd.Action = unknownCommandAction(path, func() []*cli.Command { return subs })
			configureCommands(path, cmd.Subcommands)
			continue
		}
		cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error {
			return flagUsageError(path, cmd, err)
		}
		cmd.Before = beforeAction(cmd)
	}
}

// Flags after arguments. urfave/cli v2 stops reading flags at a command's
// first argument (the standard flag package it parses with does), and has
// no option to go on; users write `oci-tofu lock ./infra --platform
// linux_amd64`. reorderArgs moves the flags of the command the arguments
// name before its positional arguments, in their order. A flag that takes
// a value keeps it ("--platform linux_amd64", "--platform=linux_amd64");
// everything after "--" stays an argument; an unknown flag moves alone,
// for urfave/cli to report; the completion flag stays last, where
// urfave/cli looks for it.

// completionFlag is the flag urfave/cli's shell completion appends last.
const completionFlag = "--generate-bash-completion"

func reorderArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	rest, tail := args[1:], []string(nil)
	if rest[len(rest)-1] == completionFlag {
		rest, tail = rest[:len(rest)-1], []string{completionFlag}
	}
	i := 0 // the application's own flags come first; then the command path
	for i < len(rest) && isFlag(rest[i]) {
		i++
	}
	out := append([]string{args[0]}, rest[:i]...)
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
		for i < len(rest) && isFlag(rest[i]) && subcommand(rest[i]) == nil { // flags between a command and its subcommand stay put
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
// positional arguments; "--" is kept, after the flags, before every
// argument that follows it.
func splitFlags(flags []cli.Flag, args []string) (moved, positional []string) {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			return append(moved, "--"), append(positional, args[i+1:]...)
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

// Flag help. urfave/cli v2 puts a flag's names and usage on one line and
// aligns every usage after the longest names, which made lines of over
// 300 columns; flagHelp puts the names on one line and the usage below,
// wrapped to helpWidth. The help template indents the first line by 3
// columns and the lines after it by 6; the usage gets 2 more.

// helpWidth is the widest line help may print.
const helpWidth = 100

// defaultFlagString is urfave/cli's own rendering of a flag:
// "NAMES\tUSAGE (default: …) [$ENV]".
var defaultFlagString = cli.FlagStringer

func flagHelp(f cli.Flag) string {
	names, usage, ok := strings.Cut(defaultFlagString(f), "\t")
	if !ok || strings.TrimSpace(usage) == "" {
		return names
	}
	return names + "\n" + report.WrapWords(usage, helpWidth-8, "  ")
}

// Usage errors. urfave/cli v2 answers a bad flag with "Incorrect Usage",
// the whole help page and the error, checks no argument counts, and
// reports a missing required flag after the whole help page too. Here
// every bad command line is one usageErr: what is wrong, and the
// command's synopsis, before any work; exit status 1, as for any error.

// usageErr is a command line a command cannot take.
type usageErr struct {
	msg      string
	synopsis string
}

func (e *usageErr) Error() string {
	return e.msg + "\nusage: " + e.synopsis
}

// errorLine is how main prints an error: usage errors name their command
// themselves.
func errorLine(err error) string {
	var u *usageErr
	if errors.As(err, &u) {
		return err.Error()
	}
	return "oci-tofu: " + err.Error()
}

// synopsis is "oci-tofu push provider [flags] DIR REPOSITORY   (… --help for more)".
func synopsis(path string, cmd *cli.Command) string {
	s := path
	if len(cmd.Flags) > 0 {
		s += " [flags]"
	}
	if cmd.ArgsUsage != "" {
		s += " " + cmd.ArgsUsage
	}
	return s + "   (" + path + " --help for more)"
}

// usageError reports a bad command line for the running command
// ("oci-tofu push provider: …").
func usageError(c *cli.Context, format string, args ...any) error {
	path := c.App.Name
	if c.Command != nil && c.Command.HelpName != "" {
		path = c.Command.HelpName
	}
	return &usageErr{msg: path + ": " + fmt.Sprintf(format, args...), synopsis: synopsis(path, c.Command)}
}

// wantArgs checks the number of positional arguments: at least min and
// at most max (max < 0: no limit).
func wantArgs(c *cli.Context, min, max int) error {
	n := c.NArg()
	var want string
	switch {
	case n >= min && (max < 0 || n <= max):
		return nil
	case max == 0:
		return usageError(c, "takes no arguments, got %s", report.Quoted(c.Args().Slice()))
	case min == max:
		want = names.Plural(min, "argument")
	case n < min:
		want = "at least " + names.Plural(min, "argument")
	default:
		want = "at most " + names.Plural(max, "argument")
	}
	got := fmt.Sprint(n)
	if n > 0 {
		got += ": " + report.Quoted(c.Args().Slice())
	}
	return usageError(c, "takes %s (%s), got %s", want, c.Command.ArgsUsage, got)
}

// flagUsageError is the OnUsageError hook: a flag parsing error as a usage
// error, with the closest known flag for an unknown one.
func flagUsageError(path string, cmd *cli.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		msg = "unknown flag --" + name
		var names []string
		for _, f := range cmd.Flags {
			names = append(names, f.Names()...)
		}
		if s := report.Closest(name, names); s != "" {
			msg += fmt.Sprintf("; did you mean --%s?", s)
		}
	} else {
		msg = strings.ReplaceAll(msg, " -", " --")
	}
	return &usageErr{msg: path + ": " + msg, synopsis: synopsis(path, cmd)}
}

// beforeAction runs once urfave/cli has parsed a command's flags, before
// its action: it records what decides error hints (hints.go), then checks
// the command's required flags itself (their Required is cleared, so that
// urfave/cli does not print its help page), a missing one being a usage
// error naming the flag.
func beforeAction(cmd *cli.Command) cli.BeforeFunc {
	required := takeRequired(cmd.Flags)
	return func(c *cli.Context) error {
		c.App.Metadata[hintsKey] = hintContextOf(c)
		for _, f := range required {
			if name := f.Names()[0]; !c.IsSet(name) {
				return usageError(c, "missing --%s (%s)", name, flagUsage(f))
			}
		}
		return nil
	}
}

// takeRequired clears Required on flags and returns the flags it was set on.
func takeRequired(flags []cli.Flag) []cli.Flag {
	var required []cli.Flag
	for _, f := range flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			if f.Required {
				f.Required, required = false, append(required, f)
			}
		case *cli.StringSliceFlag:
			if f.Required {
				f.Required, required = false, append(required, f)
			}
		}
	}
	return required
}

// flagUsage is a flag's help text, without urfave/cli's placeholder quotes.
func flagUsage(f cli.Flag) string {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return ""
	}
	return strings.ReplaceAll(df.GetUsage(), "`", "")
}

// Unknown commands. urfave/cli v2 answers an unknown command with its help
// action's "No help topic for …" and exit status 3, and its
// CommandNotFound hook cannot return an error. unknownCommandAction is the
// action of the application and of commands that only group subcommands:
// `help` shows the help (exit status 0, as --help); no command, or an
// unknown one, is a usage error naming the commands and the closest one.
func unknownCommandAction(path string, commands func() []*cli.Command) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.Args().First() == "help" {
			if c.Command != nil && c.Command.Name != "" && len(c.Command.Subcommands) > 0 {
				return cli.ShowSubcommandHelp(c)
			}
			return cli.ShowAppHelp(c)
		}
		var names []string
		for _, cmd := range commands() {
			if !cmd.Hidden {
				names = append(names, cmd.Names()...)
			}
		}
		sort.Strings(names)
		synopsis := path + " COMMAND   (one of: " + strings.Join(names, ", ") + "; " + path + " --help for more)"
		if c.NArg() == 0 {
			return &usageErr{msg: path + ": missing command", synopsis: synopsis}
		}
		name := c.Args().First()
		msg := fmt.Sprintf("%s: unknown command %q", path, name)
		if s := report.Closest(name, names); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", path+" "+s)
		}
		return &usageErr{msg: msg, synopsis: synopsis}
	}
}
