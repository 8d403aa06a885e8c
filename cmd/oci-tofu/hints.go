package main

import (
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/hints"
)

// hintContext is what the command line said that decides a hint.
type hintContext = hints.Context

// registryHints is the hint context of registry options.
func registryHints(ro oci.Options, template string) hintContext {
	return hintContext{PlainHTTP: ro.PlainHTTP, Username: ro.Username != "", CAFile: ro.CAFile != "", Template: template}
}

// hintsKey is where beforeAction leaves the running command's hint
// context, in the application's Metadata, for main.
const hintsKey = "hints"

// hintContextOf is the hint context of a command's parsed flags (set on
// the command line or by their environment variables). The template is
// the first template flag set: serve takes several.
func hintContextOf(c *cli.Context) hintContext {
	hc := hintContext{PlainHTTP: c.Bool("plain-http"), Username: c.String("username") != "", CAFile: c.String("ca-file") != ""}
	for _, name := range []string{"provider-template", "module-template", "config"} {
		if c.IsSet(name) {
			hc.Template = "--" + name
			break
		}
	}
	return hc
}

// hintContextOfRun is the hint context beforeAction recorded for the
// command app ran (the zero context when none ran).
func hintContextOfRun(app *cli.App) hintContext {
	hc, _ := app.Metadata[hintsKey].(hintContext)
	return hc
}

// hint is one line saying what to do about a failure (hints.For), or
// "" for a usage error: its message says it.
func hint(err error, hc hintContext) string {
	var u *usageErr
	if errors.As(err, &u) {
		return ""
	}
	return hints.For(err, hc)
}
