package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// stubActions replaces every command's action, so that a command line is
// parsed and checked (Before) but does nothing.
func stubActions(cmds []*cli.Command) {
	for _, c := range cmds {
		if len(c.Subcommands) > 0 {
			stubActions(c.Subcommands)
			continue
		}
		c.Action = func(*cli.Context) error { return nil }
	}
}

// The hint context is what urfave/cli parsed: flags anywhere on the line,
// and their environment variables.
func TestHintContextOfParsedFlags(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args string
		want hintContext
	}{
		{"", "verify REF --ca-file ca.pem --username u", hintContext{CAFile: true, Username: true}},
		{"OCI_TOFU_PLAIN_HTTP=true", "pull module REF DIR", hintContext{PlainHTTP: true}},
		{"OCI_TOFU_PLAIN_HTTP=1", "verify --plain-http=false REF", hintContext{}},
		{"", "export DIR example.com/a/b --provider-template T", hintContext{Template: "--provider-template"}},
		{"OCI_TOFU_PROVIDER_TEMPLATE=T", "lock . --platform linux_amd64", hintContext{Template: "--provider-template"}},
		{"", "serve --module-template M", hintContext{Template: "--module-template"}},
		{"", "serve --config tofu.rc", hintContext{Template: "--config"}},
	} {
		t.Run(tc.args, func(t *testing.T) {
			if name, value, ok := strings.Cut(tc.env, "="); ok {
				t.Setenv(name, value)
			}
			app := newApp()
			stubActions(app.Commands)
			if err := app.Run(reorderArgs(app, append([]string{"oci-tofu"}, strings.Fields(tc.args)...))); err != nil {
				t.Fatal(err)
			}
			if got := hintContextOfRun(app); got != tc.want {
				t.Errorf("%s: %+v, want %+v", tc.env, got, tc.want)
			}
		})
	}
}

// A required flag left out is a usage error naming it, before the action.
func TestRequiredFlagIsAUsageError(t *testing.T) {
	app := newApp()
	stubActions(app.Commands)
	err := app.Run([]string{"oci-tofu", "lock", "--provider-template", "x.io/${namespace}/${type}", "."})
	var u *usageErr
	if !errors.As(err, &u) || !strings.HasPrefix(err.Error(), "oci-tofu lock: missing --platform (lock for this os_arch (repeatable))\nusage: oci-tofu lock [flags] [DIR]") {
		t.Errorf("err = %v", err)
	}
}
