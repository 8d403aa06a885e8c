package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"
)

// usageErr is a command line a command cannot take: what is wrong, and the
// command's synopsis. Every command reports bad command lines this way,
// before it does any work; the exit status is 1, as for any error.
type usageErr struct {
	msg      string
	synopsis string
}

func (e *usageErr) Error() string {
	return e.msg + "\nusage: " + e.synopsis
}

// synopsis is "oci-tofu push provider [flags] DIR REPOSITORY".
func synopsis(path string, cmd *cli.Command) string {
	s := path
	if len(cmd.VisibleFlags()) > 0 || len(cmd.Flags) > 0 {
		s += " [flags]"
	}
	if cmd.ArgsUsage != "" {
		s += " " + cmd.ArgsUsage
	}
	return s + "   (" + path + " --help for more)"
}

// commandPath is the command's full name, "oci-tofu push provider".
func commandPath(c *cli.Context) string {
	if c.Command != nil && c.Command.HelpName != "" {
		return c.Command.HelpName
	}
	return c.App.Name
}

// usageError reports a bad command line for the running command.
func usageError(c *cli.Context, format string, args ...any) error {
	path := commandPath(c)
	return &usageErr{msg: path + ": " + fmt.Sprintf(format, args...), synopsis: synopsis(path, c.Command)}
}

// wantArgs checks the number of positional arguments: at least min and
// at most max (max < 0: no limit).
func wantArgs(c *cli.Context, min, max int) error {
	n := c.NArg()
	if n >= min && (max < 0 || n <= max) {
		return nil
	}
	what := c.Command.ArgsUsage
	var want string
	switch {
	case max == 0:
		return usageError(c, "takes no arguments, got %s", quoted(c.Args().Slice()))
	case min == max:
		want = names.Plural(min, "argument")
	case n < min:
		want = "at least " + names.Plural(min, "argument")
	default:
		want = "at most " + names.Plural(max, "argument")
	}
	got := fmt.Sprint(n)
	if n > 0 {
		got += ": " + quoted(c.Args().Slice())
	}
	return usageError(c, "takes %s (%s), got %s", want, what, got)
}

func quoted(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, " ")
}

// configureCLI gives every command the same manners: flags anywhere on the
// command line (reorderArgs), bad command lines reported with the
// command's synopsis before any work starts, unknown commands answered
// with the closest one, `version`, and shell completion.
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

// beforeAction runs once urfave/cli has parsed a command's flags, before
// its action: it records what decides error hints (hints.go), then checks
// the command's required flags itself, so that a missing one is a usage
// error naming the flag and the synopsis. urfave/cli's own check prints
// the whole help page followed by a bare error, so the flags' Required is
// cleared here and kept as a list.
func beforeAction(cmd *cli.Command) cli.BeforeFunc {
	required := takeRequired(cmd.Flags)
	return func(c *cli.Context) error {
		c.App.Metadata[hintsKey] = hintContextOf(c)
		for _, f := range required {
			name := f.Names()[0]
			if !c.IsSet(name) {
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
				f.Required = false
				required = append(required, f)
			}
		case *cli.StringSliceFlag:
			if f.Required {
				f.Required = false
				required = append(required, f)
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

// errorLine is how main prints an error: usage errors name their command
// themselves.
func errorLine(err error) string {
	var u *usageErr
	if errors.As(err, &u) {
		return err.Error()
	}
	return "oci-tofu: " + err.Error()
}

// flagUsageError turns a flag parsing error into a usage error, with the
// closest known flag for an unknown one (the OnUsageError hook; urfave/cli
// would print "Incorrect Usage" and the whole help page).
func flagUsageError(path string, cmd *cli.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		msg = "unknown flag --" + name
		var names []string
		for _, f := range cmd.Flags {
			names = append(names, f.Names()...)
		}
		if s := closest(name, names); s != "" {
			msg += fmt.Sprintf("; did you mean --%s?", s)
		}
	} else {
		msg = strings.ReplaceAll(msg, " -", " --")
	}
	return &usageErr{msg: path + ": " + msg, synopsis: synopsis(path, cmd)}
}

// unknownCommandAction is the action of the application and of commands
// that only group subcommands. `help` shows the help (exit status 0, as
// --help); no command, or an unknown one, is a usage error like any other
// (exit status 1), naming the commands and the closest one. urfave/cli v2
// would show its help action's "No help topic for …" with exit status 3,
// and its CommandNotFound hook cannot return an error.
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
		if s := closest(name, names); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", path+" "+s)
		}
		return &usageErr{msg: msg, synopsis: synopsis}
	}
}

// closest is the candidate most like s, or "" when none is close enough
// to be what was meant: one edit or swap of neighbours away (a typo in a
// short name such as --kye), or else the best Jaro-Winkler match, as
// urfave/cli's own suggestions use. urfave/cli's SuggestFlag and
// SuggestCommand always suggest something, however far (and "help"), so
// they cannot say "no suggestion".
func closest(s string, candidates []string) string {
	s = strings.ToLower(s)
	for _, c := range candidates {
		if len(s) >= 3 && len(c) >= 3 && editDistance(s, c) <= 1 {
			return c
		}
	}
	best, score := "", 0.0
	for _, c := range candidates {
		if d := smetrics.JaroWinkler(s, c, 0.7, 4); d > score {
			best, score = c, d
		}
	}
	if score < 0.75 {
		return ""
	}
	return best
}

// editDistance counts the insertions, deletions, substitutions and swaps
// of neighbouring letters that turn a into b (optimal string alignment).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2, prev, cur := make([]int, len(rb)+1), make([]int, len(rb)+1), make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version",
		Action: func(c *cli.Context) error {
			if err := wantArgs(c, 0, 0); err != nil {
				return err
			}
			cli.ShowVersion(c) // as --version
			return nil
		},
	}
}
