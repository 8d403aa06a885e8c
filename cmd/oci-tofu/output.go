package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/oci-tofu/oci-tofu/oci"
)

func outputFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing but errors"},
		&cli.BoolFlag{Name: "json", Usage: "print the result as JSON (for CI)"},
	}
}

// reporter prints progress and results according to --quiet and --json.
type reporter struct {
	out, err  io.Writer
	quiet     bool
	json      bool
	tty       bool
	mu        sync.Mutex
	lastPrint time.Time
}

func newReporter(c *cli.Context) *reporter {
	return &reporter{
		out:   c.App.Writer,
		err:   c.App.ErrWriter,
		quiet: c.Bool("quiet"),
		json:  c.Bool("json"),
		tty:   term.IsTerminal(int(os.Stderr.Fd())),
	}
}

// infof prints a human line to stderr unless quiet or JSON.
func (r *reporter) infof(format string, args ...any) {
	if r.quiet || r.json {
		return
	}
	fmt.Fprintf(r.err, format+"\n", args...)
}

// progress returns a byte-progress callback drawn on a terminal, or nil.
func (r *reporter) progress(what string) func(done, total int64) {
	if r.quiet || r.json || !r.tty {
		return nil
	}
	return func(done, total int64) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if done < total && time.Since(r.lastPrint) < 100*time.Millisecond {
			return
		}
		r.lastPrint = time.Now()
		fmt.Fprintf(r.err, "\r%s %6.1f / %.1f MiB", what, float64(done)/(1<<20), float64(total)/(1<<20))
		if done >= total {
			fmt.Fprintln(r.err)
		}
	}
}

// result prints v as JSON with --json, or the human text otherwise.
func (r *reporter) result(v any, human string) error {
	if r.json {
		enc := json.NewEncoder(r.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	if !r.quiet {
		fmt.Fprintln(r.out, human)
	}
	return nil
}

// pushedLine is a push's one-line report.
func pushedLine(ref oci.Reference, res oci.PushResult) string {
	if res.UpToDate {
		return fmt.Sprintf("%s is up to date (%s)", ref, res.Root.Digest)
	}
	return fmt.Sprintf("pushed %s@%s (%d uploaded, %d already present)", ref, res.Root.Digest, res.Uploaded, res.Skipped)
}
